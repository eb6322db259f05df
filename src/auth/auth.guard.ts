import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard as PassportAuthGuard } from '@nestjs/passport';
import { DomainError, UnauthorizedError } from '../shared/domain-error.js';
import { AUTH_KIND, type AuthKind } from './auth.decorators.js';

class DeviceJwtGuard extends PassportAuthGuard('device-jwt') {
  override handleRequest<T>(error: unknown, principal: T | false): T {
    if (error instanceof DomainError) throw error;
    if (error || !principal) throw new UnauthorizedError();
    return principal;
  }
}

/**
 * Global and fail-closed: a route is reachable only when it declares who may call it
 * (@Public, @DeviceAuth, …). A route that forgot to say is refused, never left open.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly deviceGuard = new DeviceJwtGuard();

  constructor(private readonly reflector: Reflector) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (kind) {
      case 'public':
        return true;
      case 'device':
        return (await this.deviceGuard.canActivate(context)) as boolean;
      default:
        throw new UnauthorizedError('This route accepts no credentials.');
    }
  }
}
