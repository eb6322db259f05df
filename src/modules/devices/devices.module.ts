import { Module } from '@nestjs/common';
import { hmacKey } from '../../auth/access-token.js';
import { JwtModule } from '@nestjs/jwt';
import { Secrets } from '../../config/secrets.js';
import { RefreshTokenStore, SqlRefreshTokenStore } from '../../shared/auth-tokens/refresh-token-store.js';
import { Sql } from '../../shared/database/sql.js';
import { DeviceConfigService } from './application/device-config.service.js';
import { DeviceSnapshots } from './application/device-snapshots.js';
import { DeviceTokens } from './application/device-tokens.js';
import { FleetDefaultsStore } from './application/fleet-defaults.js';
import { DevicesService } from './application/devices.service.js';
import { DeviceRepository } from './domain/device.repository.js';
import { RegistrationAllowlist } from './domain/registration-allowlist.js';
import { AdminConfigController } from './http/admin-config.controller.js';
import { AdminDevicesController } from './http/admin-devices.controller.js';
import { DeviceConfigController } from './http/device-config.controller.js';
import { DevicesController } from './http/devices.controller.js';
import { SqlDeviceConfigRepository } from './infrastructure/sql-device-config.repository.js';
import { SqlFleetDefaultsStore } from './infrastructure/sql-fleet-defaults.store.js';
import { SqlRegistrationAllowlist } from './infrastructure/sql-registration-allowlist.js';
import { TypeOrmDeviceRepository } from './infrastructure/typeorm-device.repository.js';

@Module({
  imports: [
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({ secret: hmacKey(secrets.deviceJwtSecret), signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } }),
    }),
  ],
  controllers: [DevicesController, DeviceConfigController, AdminDevicesController, AdminConfigController],
  providers: [
    DevicesService,
    DeviceTokens,
    DeviceSnapshots,
    DeviceConfigService,
    SqlDeviceConfigRepository,
    { provide: FleetDefaultsStore, useClass: SqlFleetDefaultsStore },
    { provide: DeviceRepository, useClass: TypeOrmDeviceRepository },
    { provide: RegistrationAllowlist, useClass: SqlRegistrationAllowlist },
    { provide: RefreshTokenStore, inject: [Sql], useFactory: (sql: Sql) => new SqlRefreshTokenStore(sql, 'device_refresh_tokens', 'device_id') },
  ],
  exports: [DevicesService, DeviceSnapshots, DeviceConfigService, FleetDefaultsStore],
})
export class DevicesModule {}
