import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiSecurity } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiCredentialCheckUnavailable, ApiProblems, ApiProblemsDescribed } from '../shared/http/api-problems.decorator.js';
import type { ApiKeyScope, CustomerPrincipal, DevicePrincipal } from './principals.js';

export const AUTH_KIND = 'auth:kind';
export type AuthKind = 'public' | 'device' | 'customer' | 'customer-or-ticket' | 'admin';

/** The API keys a customer route takes (metadata read by the guard); absent: none. */
export const API_KEY_SCOPE = 'auth:api-key-scope';

/** The guard refuses a missing, malformed, expired or revoked token, and one of the other kind, with UNAUTHORIZED. */
const problem401 = ApiProblems({ 401: ['UNAUTHORIZED'] });

/** A route that takes no API key (or not this one) refuses it with 403 API_KEY_SCOPE. */
const refusesKeys = ApiProblems({ 403: ['API_KEY_SCOPE'] });

/**
 * The API keys a customer route takes, for the guard and the document: `read` any key, `write`
 * write keys only (a read key gets 403 API_KEY_SCOPE). A key is checked like a login: failures
 * count per client address (429), and the check needs the rate-limit store (503).
 */
function takesApiKeys(scope: ApiKeyScope) {
  return applyDecorators(
    SetMetadata(API_KEY_SCOPE, scope),
    ApiBearerAuth('apiKey'),
    ApiExtension('x-api-key-scope', scope),
    ApiProblems({ 429: ['RATE_LIMITED'] }),
    ApiCredentialCheckUnavailable(),
    ...(scope === 'write' ? [refusesKeys] : []),
  );
}

export interface CustomerAuthOptions {
  /**
   * The API keys (`Authorization: Bearer dck_…`) this route takes besides access tokens: `read` for
   * reads (GET only), `write` for the changes a write key may make (device config, alert rules).
   * Absent: none, every key is refused with 403 API_KEY_SCOPE. Account, key, webhook, sharing and
   * admin operations never take one.
   */
  apiKey?: ApiKeyScope;
}

/** No credentials needed. Every route must say who may call it; the global guard refuses the rest. */
export const Public = () => SetMetadata(AUTH_KIND, 'public');

/** A gateway's access token (Authorization: Bearer, audience device). */
export const DeviceAuth = () => applyDecorators(SetMetadata(AUTH_KIND, 'device'), ApiBearerAuth('device'), problem401);

/** A signed-in customer's (or administrator's) access token, or an API key where `apiKey` says so. */
export const CustomerAuth = ({ apiKey }: CustomerAuthOptions = {}) =>
  applyDecorators(SetMetadata(AUTH_KIND, 'customer'), ApiBearerAuth('customer'), problem401, apiKey ? takesApiKeys(apiKey) : refusesKeys);

/**
 * A customer's access token, or a single-use stream ticket in `?ticket=` for browsers' EventSource,
 * which cannot send headers (POST /api/v1/dashboard/stream/tickets). The ticket wins when both come.
 */
export const CustomerOrTicketAuth = () =>
  applyDecorators(SetMetadata(AUTH_KIND, 'customer-or-ticket'), ApiBearerAuth('customer'), ApiSecurity('streamTicket'), problem401, refusesKeys);

/** A customer token whose account has the admin role; customers get 403, and so does any API key (keys never carry admin rights). */
export const AdminAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, 'admin'),
    ApiBearerAuth('customer'),
    ApiExtension('x-required-role', 'admin'),
    problem401,
    ApiProblemsDescribed(403, ['FORBIDDEN', 'API_KEY_SCOPE'], 'The account is not an administrator (FORBIDDEN), or the credential is an API key, which never reaches admin operations (API_KEY_SCOPE).'),
  );

export const CurrentDevice = createParamDecorator((_: unknown, context: ExecutionContext): DevicePrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: DevicePrincipal }>().user;
});

export const CurrentCustomer = createParamDecorator((_: unknown, context: ExecutionContext): CustomerPrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>().user;
});
