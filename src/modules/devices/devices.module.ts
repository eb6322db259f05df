import { Global, Module } from '@nestjs/common';
import { DeviceAuthenticator } from '../../auth/principals.js';
import { hmacKey } from '../../auth/access-token.js';
import { JwtModule } from '@nestjs/jwt';
import { Secrets } from '../../config/secrets.js';
import { RefreshTokenStore } from '../../shared/auth-tokens/refresh-token-store.js';
import { SqlRefreshTokenStore } from '../../shared/auth-tokens/sql-refresh-token.store.js';
import { Sql } from '../../shared/database/sql.js';
import { AuditModule } from '../audit/index.js';
import { EventsModule } from '../events/index.js';
import { DeviceReturns } from '../telemetry/index.js';
import { DeviceConfigService } from './application/device-config.service.js';
import { DeviceSnapshots } from './application/device-snapshots.js';
import { DeviceTokens } from './application/device-tokens.js';
import { OfflineCheck } from './application/offline-check.js';
import { OnlineTransitions } from './application/online-transitions.js';
import { FleetDefaultsStore } from './application/fleet-defaults.js';
import { DeviceLabelsService } from './application/device-labels.service.js';
import { DeviceOwnershipService } from './application/device-ownership.service.js';
import { DeviceRegistrationService } from './application/device-registration.service.js';
import { DeviceConfigRepository } from './domain/device-config.repository.js';
import { DeviceDirectory } from './domain/device-directory.js';
import { DeviceReports } from './domain/device-reports.js';
import { DeviceRepository } from './domain/device.repository.js';
import { DeviceSnapshotQueries } from './domain/device-snapshot.queries.js';
import { RegistrationAllowlistStore } from './domain/registration-allowlist.store.js';
import { AdminConfigController } from './http/admin-config.controller.js';
import { AdminDevicesController } from './http/admin-devices.controller.js';
import { DeviceConfigController } from './http/device-config.controller.js';
import { DevicesController } from './http/devices.controller.js';
import { SqlDeviceDirectory } from './infrastructure/sql-device-directory.js';
import { SqlDeviceReports } from './infrastructure/sql-device-reports.js';
import { SqlDeviceSnapshotQueries } from './infrastructure/sql-device-snapshot.queries.js';
import { DEVICE_REFRESH_TOKENS } from './infrastructure/device.record.js';
import { TypeOrmDeviceConfigRepository } from './infrastructure/typeorm-device-config.repository.js';
import { SqlDeviceRepository } from './infrastructure/sql-device.repository.js';
import { TypeOrmFleetDefaultsStore } from './infrastructure/typeorm-fleet-defaults.store.js';
import { TypeOrmRegistrationAllowlistStore } from './infrastructure/typeorm-registration-allowlist.store.js';

@Module({
  imports: [
    AuditModule,
    EventsModule,
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({ secret: hmacKey(secrets.deviceJwtSecret), signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } }),
    }),
  ],
  controllers: [DevicesController, DeviceConfigController, AdminDevicesController, AdminConfigController],
  providers: [
    OfflineCheck,
    OnlineTransitions,
    DeviceRegistrationService,
    DeviceOwnershipService,
    DeviceLabelsService,
    DeviceTokens,
    DeviceSnapshots,
    DeviceConfigService,
    { provide: DeviceConfigRepository, useClass: TypeOrmDeviceConfigRepository },
    { provide: FleetDefaultsStore, useClass: TypeOrmFleetDefaultsStore },
    { provide: DeviceRepository, useClass: SqlDeviceRepository },
    { provide: DeviceSnapshotQueries, useClass: SqlDeviceSnapshotQueries },
    { provide: RegistrationAllowlistStore, useClass: TypeOrmRegistrationAllowlistStore },
    { provide: DeviceDirectory, useClass: SqlDeviceDirectory },
    { provide: DeviceReports, useClass: SqlDeviceReports },
    { provide: RefreshTokenStore, inject: [Sql], useFactory: (sql: Sql) => new SqlRefreshTokenStore(sql, DEVICE_REFRESH_TOKENS) },
    // The port the device guard looks devices up through (src/auth/principals.ts).
    { provide: DeviceAuthenticator, useExisting: DeviceRegistrationService },
  ],
  exports: [DeviceOwnershipService, DeviceLabelsService, DeviceSnapshots, DeviceConfigService, FleetDefaultsStore, DeviceAuthenticator, OnlineTransitions, DeviceDirectory, DeviceReports],
})
export class DevicesModule {}

/**
 * The telemetry module's DeviceReturns port (telemetry/domain), implemented here. Global, as the
 * telemetry module cannot import this one (which depends on it for the port); the composition
 * root imports it once.
 */
@Global()
@Module({
  imports: [DevicesModule],
  providers: [{ provide: DeviceReturns, useExisting: OnlineTransitions }],
  exports: [DeviceReturns],
})
export class DeviceReturnsModule {}
