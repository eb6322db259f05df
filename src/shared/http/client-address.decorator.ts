import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/** The caller's address; X-Forwarded-For counts only from proxies named in TRUST_PROXY. */
export const ClientAddress = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  return context.switchToHttp().getRequest<FastifyRequest>().ip ?? 'unknown';
});
