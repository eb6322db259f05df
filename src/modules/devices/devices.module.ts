import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { Secrets } from '../../config/secrets.js';
import { RefreshTokenStore, SqlRefreshTokenStore } from '../../shared/auth-tokens/refresh-token-store.js';
import { Sql } from '../../shared/database/sql.js';
import { DeviceTokens } from './application/device-tokens.js';
import { DevicesService } from './application/devices.service.js';
import { DeviceRepository } from './domain/device.repository.js';
import { RegistrationAllowlist } from './domain/registration-allowlist.js';
import { AdminDevicesController } from './http/admin-devices.controller.js';
import { DevicesController } from './http/devices.controller.js';
import { SqlRegistrationAllowlist } from './infrastructure/sql-registration-allowlist.js';
import { TypeOrmDeviceRepository } from './infrastructure/typeorm-device.repository.js';

@Module({
  imports: [
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({ secret: secrets.deviceJwtSecret, signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } }),
    }),
  ],
  controllers: [DevicesController, AdminDevicesController],
  providers: [
    DevicesService,
    DeviceTokens,
    { provide: DeviceRepository, useClass: TypeOrmDeviceRepository },
    { provide: RegistrationAllowlist, useClass: SqlRegistrationAllowlist },
    { provide: RefreshTokenStore, inject: [Sql], useFactory: (sql: Sql) => new SqlRefreshTokenStore(sql, 'device_refresh_tokens', 'device_id') },
  ],
  exports: [DevicesService],
})
export class DevicesModule {}
