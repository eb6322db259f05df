import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiResponse, ApiSecurity } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { CustomerPrincipal, DevicePrincipal } from './principals.js';

export const AUTH_KIND = 'auth:kind';
export type AuthKind = 'public' | 'device' | 'customer' | 'customer-or-ticket' | 'admin';

const problem = (status: number, description: string) =>
  ApiResponse({ status, description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemResponse' } } } });

const problem401 = problem(401, 'Missing, invalid, expired or revoked bearer token.');

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
    problem(403, 'The account is not an administrator.'),
  );

export const CurrentDevice = createParamDecorator((_: unknown, context: ExecutionContext): DevicePrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: DevicePrincipal }>().user;
});

export const CurrentCustomer = createParamDecorator((_: unknown, context: ExecutionContext): CustomerPrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>().user;
});
