import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import passport, { type Strategy } from 'passport';
import { API_KEY_PREFIX, ApiKeyAuthenticator, StreamTicketAuthenticator, type ApiKeyScope, type CustomerPrincipal } from './principals.js';
import { DomainError, InvalidBearerTokenError, UnauthorizedError } from '../shared/domain-error.js';
import { bearerTokenOf } from './access-token.js';
import { API_KEY_SCOPE, AUTH_KIND, type AuthKind } from './auth.decorators.js';
import { CustomerJwtStrategy } from './customer-jwt.strategy.js';
import { DeviceJwtStrategy } from './device-jwt.strategy.js';

class ForbiddenRoleError extends DomainError {
  constructor() {
    super('FORBIDDEN', 'forbidden', 'This operation needs an administrator account.');
  }
}

/** An API key on a route that takes none, or a read key on one that takes write keys only. */
class ApiKeyScopeError extends DomainError {
  constructor(message: string) {
    super('API_KEY_SCOPE', 'forbidden', message);
  }
}

/** The bearer token when it is an API key (`dck_…`), else null: JWTs always start `eyJ`. */
function apiKeyOf(request: FastifyRequest): string | null {
  const authorization = request.headers.authorization;
  const token = bearerTokenOf(typeof authorization === 'string' ? authorization : undefined);
  return token?.startsWith(API_KEY_PREFIX) ? token : null;
}

/** A token under the Bearer scheme (well-formed or not); none, or another scheme, is no bearer token sent. */
function bearerTokenSent(request: FastifyRequest): boolean {
  const authorization = request.headers.authorization;
  return typeof authorization === 'string' && /^bearer\s+\S/i.test(authorization);
}

/**
 * One passport strategy of this application as a guard, whose failures are our problem documents,
 * never Nest's default 401 body. A refused bearer token is an InvalidBearerTokenError
 * (WWW-Authenticate error="invalid_token"); a request without one gets the plain challenge
 * (RFC 6750 §3).
 *
 * It hands passport the strategy instance, not its name: passport's registry of names is one per
 * process (as is the one @nestjs/passport's AuthGuard reads), so two applications in one process,
 * as the tests' two instances on one database, would both authenticate with whichever registered
 * last: its keys and its caches. Each request gets its own object on the strategy's prototype
 * chain, as passport makes for a named strategy, so concurrent requests never share the actions
 * passport adds to it.
 */
class StrategyGuard {
  constructor(private readonly strategy: Strategy) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest & { user?: unknown }>();
    request.user = await new Promise((resolve, reject) => {
      const attempt = Object.create(this.strategy) as Strategy;
      passport.authenticate(attempt, { session: false }, (error: unknown, principal: unknown) => {
        if (!error && principal) return resolve(principal);
        const refused = error instanceof DomainError ? error : new UnauthorizedError();
        reject(refused.kind === 'unauthorized' && bearerTokenSent(request) ? new InvalidBearerTokenError(refused.message) : refused);
      })(request, http.getResponse(), (error?: unknown) => reject(error ?? new UnauthorizedError()));
    });
    return true;
  }
}

/**
 * Global and fail-closed: a route is reachable only when it declares who may call it
 * (@Public, @DeviceAuth, @CustomerAuth, @AdminAuth). A route that forgot to say is refused.
 * Likewise an API key reaches only the customer routes that say they take it
 * (`@CustomerAuth({ apiKey })`): every other route refuses it, admin routes always.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly deviceGuard: StrategyGuard;
  private readonly customerGuard: StrategyGuard;

  constructor(
    private readonly reflector: Reflector,
    private readonly tickets: StreamTicketAuthenticator,
    private readonly apiKeys: ApiKeyAuthenticator,
    device: DeviceJwtStrategy,
    customer: CustomerJwtStrategy,
  ) {
    this.deviceGuard = new StrategyGuard(device);
    this.customerGuard = new StrategyGuard(customer);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (kind) {
      case 'public':
        return true;
      case 'device':
        return this.deviceGuard.canActivate(context);
      case 'customer':
        return this.customer(context, true);
      case 'customer-or-ticket': {
        const request = context.switchToHttp().getRequest<FastifyRequest & { user?: CustomerPrincipal }>();
        const ticket = (request.query as Record<string, unknown> | undefined)?.ticket;
        if (ticket === undefined) return this.customer(context, false);
        if (typeof ticket !== 'string') throw new UnauthorizedError('The stream ticket is not valid.');
        request.user = await this.tickets.authenticate(ticket, request.ip ?? 'unknown');
        return true;
      }
      case 'admin': {
        await this.customer(context, false);
        const customer = context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>().user;
        if (!customer.isAdmin) throw new ForbiddenRoleError();
        return true;
      }
      default:
        throw new UnauthorizedError('This route accepts no credentials.');
    }
  }

  /**
   * A customer access token, or an API key where the route takes keys of its scope. A key on a
   * route that takes none is refused before it is looked up: that answer is the same for every
   * key, so it tells nothing, and costs neither a read nor a count against the failure limit.
   * `mayTakeKeys`: the route kind allows keys at all; which scope it takes is read only when a key
   * came, so an access token costs no metadata lookup.
   */
  private async customer(context: ExecutionContext, mayTakeKeys: boolean): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest & { user?: CustomerPrincipal }>();
    const key = apiKeyOf(request);
    if (key === null) return this.customerGuard.canActivate(context);
    const takes = mayTakeKeys ? this.reflector.getAllAndOverride<ApiKeyScope | undefined>(API_KEY_SCOPE, [context.getHandler(), context.getClass()]) : undefined;
    if (!takes) throw new ApiKeyScopeError('This operation does not accept API keys: sign in to use it.');
    const principal = await this.apiKeys.authenticate(key, request.ip ?? 'unknown');
    if (takes === 'write' && principal.apiKey?.scope !== 'write') throw new ApiKeyScopeError('This operation changes something: it needs a key with the write scope.');
    request.user = principal;
    return true;
  }
}
