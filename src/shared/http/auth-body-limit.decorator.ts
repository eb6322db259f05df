import { RouteConfig } from '@nestjs/platform-fastify';

/**
 * Bodies of the unauthenticated auth routes (register, logins, refreshes, logout, sign-up, e-mail
 * verification) are a few short strings, under 2 KiB even with every character \u-escaped; larger
 * is 413 before the body is parsed or validated.
 */
export const AUTH_BODY_LIMIT_BYTES = 4 * 1024;

export const AuthBodyLimit = (): MethodDecorator => RouteConfig({ bodyLimit: AUTH_BODY_LIMIT_BYTES });
