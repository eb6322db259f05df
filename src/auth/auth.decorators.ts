import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth, ApiResponse } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { DevicePrincipal } from '../modules/devices/application/devices.service.js';

export const AUTH_KIND = 'auth:kind';
export type AuthKind = 'public' | 'device';

const problem401 = ApiResponse({
  status: 401,
  description: 'Missing, invalid, expired or revoked bearer token.',
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemResponse' } } },
});

/** No credentials needed. Every route must say who may call it; the global guard refuses the rest. */
export const Public = () => SetMetadata(AUTH_KIND, 'public');

/** A gateway's access token (Authorization: Bearer, audience device). */
export const DeviceAuth = () => applyDecorators(SetMetadata(AUTH_KIND, 'device'), ApiBearerAuth('device'), problem401);

export const CurrentDevice = createParamDecorator((_: unknown, context: ExecutionContext): DevicePrincipal => {
  return context.switchToHttp().getRequest<FastifyRequest & { user: DevicePrincipal }>().user;
});
