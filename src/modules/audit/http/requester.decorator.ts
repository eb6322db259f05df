import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import type { AuditActor, AuditContext } from '../domain/audit-entry.js';

/** The actor of a signed-in request: an administrator, a customer and the API key they came with, or an organization's key. */
export function actorOf(customer: CustomerPrincipal): AuditActor {
  const kind = customer.isAdmin ? 'admin' : customer.apiKey?.holder === 'organization' ? 'organization' : 'user';
  return { kind, userId: customer.userId, apiKeyId: customer.apiKey?.keyId ?? null };
}

/**
 * Who asks and from where, for the audit log: the customer principal the guard set and the
 * client address (X-Forwarded-For only from TRUST_PROXY, as @ClientAddress()).
 */
export const Requester = createParamDecorator((_: unknown, context: ExecutionContext): AuditContext => {
  const request = context.switchToHttp().getRequest<FastifyRequest & { user: CustomerPrincipal }>();
  return { actor: actorOf(request.user), clientAddress: request.ip ?? 'unknown' };
});
