import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { AccountsModule } from '../modules/accounts/accounts.module.js';
import { DevicesModule } from '../modules/devices/devices.module.js';
import { AuthGuard } from './auth.guard.js';
import { CustomerJwtStrategy } from './customer-jwt.strategy.js';
import { DeviceJwtStrategy } from './device-jwt.strategy.js';
import { DevicePollAuth } from './device-poll-auth.js';

@Module({
  imports: [PassportModule, DevicesModule, AccountsModule],
  providers: [DeviceJwtStrategy, CustomerJwtStrategy, DevicePollAuth, { provide: APP_GUARD, useClass: AuthGuard }],
})
export class AuthModule {}
