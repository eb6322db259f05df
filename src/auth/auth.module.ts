import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { DevicesModule } from '../modules/devices/devices.module.js';
import { AuthGuard } from './auth.guard.js';
import { DeviceJwtStrategy } from './device-jwt.strategy.js';

@Module({
  imports: [PassportModule, DevicesModule],
  providers: [DeviceJwtStrategy, { provide: APP_GUARD, useClass: AuthGuard }],
})
export class AuthModule {}
