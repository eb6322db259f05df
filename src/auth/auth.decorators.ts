import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiSecurity } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiProblems, ApiProblemsDescribed } from '../shared/http/api-problems.decorator.js';
import type { CustomerPrincipal, DevicePrincipal } from './principals.js';

export const AUTH_KIND = 'auth:kind';
export type AuthKind = 'public' | 'device' | 'customer' | 'customer-or-ticket' | 'admin';

/** The guard refuses a missing, malformed, expired or revoked token, and one of the other kind, with UNAUTHORIZED. */
const problem401 = ApiProblems({ 401: ['UNAUTHORIZED'] });

/** No credentials needed. Every route must say who may call it; the global guard refuses the rest. */
export const Public = () => SetMetadata(AUTH_KIND, 'public');

/** A gateway's access token (Authorization: Bearer, audience device). */
export const DeviceAuth = () => applyDecorators(SetMetadata(AUTH_KIND, 'device'), ApiBearerAuth('device'), problem401);

/** A signed-in customer's (or administrator's) access token. */
export const CustomerAuth = () => applyDecorators(SetMetadata(AUTH_KIND, 'customer'), ApiBearerAuth('customer'), problem401);

/**
 * A customer's access token, or a single-use stream ticket in `?ticket=` for browsers' EventSource,
 * which cannot send headers (POST /api/v1/dashboard/stream/tickets). The ticket wins when both come.
 */
export const CustomerOrTicketAuth = () =>
  applyDecorators(SetMetadata(AUTH_KIND, 'customer-or-ticket'), ApiBearerAuth('customer'), ApiSecurity('streamTicket'), problem401);

/** A customer token whose account has the admin role; customers get 403. */
export const AdminAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, 'admin'),
    ApiBearerAuth('customer'),
    ApiExtension('x-required-role', 'admin'),
    problem401,
    ApiProblemsDescribed(403, ['FORBIDDEN'], 'The account is not an administrator.'),
  );

export const CurrentDevice = createParamDecorator((_: unknown, context: ExecutionContext): DevicePrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: DevicePrincipal }>().user;
});

export const CurrentCustomer = createParamDecorator((_: unknown, context: ExecutionContext): CustomerPrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>().user;
});
