import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard as PassportAuthGuard, type IAuthGuard } from '@nestjs/passport';
import type { FastifyRequest } from 'fastify';
import type { CustomerPrincipal } from '../modules/accounts/application/accounts.service.js';
import { DomainError, UnauthorizedError } from '../shared/domain-error.js';
import { AUTH_KIND, type AuthKind } from './auth.decorators.js';

class ForbiddenRoleError extends DomainError {
  constructor() {
    super('FORBIDDEN', 'forbidden', 'This operation needs an administrator account.');
  }
}

/** Passport guard whose failures are our problem documents, never Nest's default 401 body. */
function strategyGuard(strategy: 'device-jwt' | 'customer-jwt'): IAuthGuard {
  class StrategyGuard extends PassportAuthGuard(strategy) {
    override handleRequest<T>(error: unknown, principal: T | false): T {
      if (error instanceof DomainError) throw error;
      if (error || !principal) throw new UnauthorizedError();
      return principal;
    }
  }
  return new StrategyGuard();
}

/**
 * Global and fail-closed: a route is reachable only when it declares who may call it
 * (@Public, @DeviceAuth, @CustomerAuth, @AdminAuth). A route that forgot to say is refused.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly deviceGuard = strategyGuard('device-jwt');
  private readonly customerGuard = strategyGuard('customer-jwt');

  constructor(private readonly reflector: Reflector) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (kind) {
      case 'public':
        return true;
      case 'device':
        return (await this.deviceGuard.canActivate(context)) as boolean;
      case 'customer':
        return (await this.customerGuard.canActivate(context)) as boolean;
      case 'admin': {
        await this.customerGuard.canActivate(context);
        const customer = context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>().user;
        if (!customer.isAdmin) throw new ForbiddenRoleError();
        return true;
      }
      default:
        throw new UnauthorizedError('This route accepts no credentials.');
    }
  }
}
