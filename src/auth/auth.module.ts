import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthGuard } from './auth.guard.js';
import { CustomerJwtStrategy } from './customer-jwt.strategy.js';
import { DeviceJwtStrategy } from './device-jwt.strategy.js';
import { DevicePollAuth } from './device-poll-auth.js';

@Module({})
export class AuthModule {
  /**
   * The guards and strategies, given the modules that provide DeviceAuthenticator and
   * CustomerAuthenticator (src/auth/principals.ts): the composition root passes them in, so auth
   * imports no module.
   */
  static register(principalProviders: NonNullable<ModuleMetadata['imports']>): DynamicModule {
    return {
      module: AuthModule,
      imports: principalProviders,
      providers: [DeviceJwtStrategy, CustomerJwtStrategy, DevicePollAuth, { provide: APP_GUARD, useClass: AuthGuard }],
    };
  }
}
