import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard as PassportAuthGuard, type IAuthGuard } from '@nestjs/passport';
import type { FastifyRequest } from 'fastify';
import { StreamTicketAuthenticator, type CustomerPrincipal } from './principals.js';
import { DomainError, InvalidBearerTokenError, UnauthorizedError } from '../shared/domain-error.js';
import { AUTH_KIND, type AuthKind } from './auth.decorators.js';

class ForbiddenRoleError extends DomainError {
  constructor() {
    super('FORBIDDEN', 'forbidden', 'This operation needs an administrator account.');
  }
}

/** A token under the Bearer scheme (well-formed or not); none, or another scheme, is no bearer token sent. */
function bearerTokenSent(context: ExecutionContext): boolean {
  const authorization = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization;
  return typeof authorization === 'string' && /^bearer\s+\S/i.test(authorization);
}

/**
 * Passport guard whose failures are our problem documents, never Nest's default 401 body. A
 * refused bearer token is an InvalidBearerTokenError (WWW-Authenticate error="invalid_token");
 * a request without one gets the plain challenge (RFC 6750 §3).
 */
function strategyGuard(strategy: 'device-jwt' | 'customer-jwt'): IAuthGuard {
  class StrategyGuard extends PassportAuthGuard(strategy) {
    override handleRequest<T>(error: unknown, principal: T | false, _info: unknown, context: ExecutionContext): T {
      if (!error && principal) return principal;
      const refused = error instanceof DomainError ? error : new UnauthorizedError();
      if (refused.kind === 'unauthorized' && bearerTokenSent(context)) throw new InvalidBearerTokenError(refused.message);
      throw refused;
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

  constructor(
    private readonly reflector: Reflector,
    private readonly tickets: StreamTicketAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (kind) {
      case 'public':
        return true;
      case 'device':
        return (await this.deviceGuard.canActivate(context)) as boolean;
      case 'customer':
        return (await this.customerGuard.canActivate(context)) as boolean;
      case 'customer-or-ticket': {
        const request = context.switchToHttp().getRequest<FastifyRequest & { user?: CustomerPrincipal }>();
        const ticket = (request.query as Record<string, unknown> | undefined)?.ticket;
        if (ticket === undefined) return (await this.customerGuard.canActivate(context)) as boolean;
        if (typeof ticket !== 'string') throw new UnauthorizedError('The stream ticket is not valid.');
        request.user = await this.tickets.authenticate(ticket, request.ip ?? 'unknown');
        return true;
      }
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
