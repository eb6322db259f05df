import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { Secrets } from '../../config/secrets.js';
import { DeviceTokens } from './application/device-tokens.js';
import { DevicesService } from './application/devices.service.js';
import { DeviceRepository } from './domain/device.repository.js';
import { DevicesController } from './http/devices.controller.js';
import { TypeOrmDeviceRepository } from './infrastructure/typeorm-device.repository.js';

@Module({
  imports: [
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({ secret: secrets.deviceJwtSecret, signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } }),
    }),
  ],
  controllers: [DevicesController],
  providers: [DevicesService, DeviceTokens, { provide: DeviceRepository, useClass: TypeOrmDeviceRepository }],
  exports: [DevicesService],
})
export class DevicesModule {}
