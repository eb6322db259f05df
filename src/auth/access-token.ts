import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { StrategyOptionsWithoutRequest } from 'passport-jwt';
import { ACCESS_TOKEN_TYPE, TOKEN_ISSUER } from '../modules/devices/application/device-tokens.js';
import { UnauthorizedError } from '../shared/domain-error.js';

/** What passport-jwt hands to validate() with `complete: true`. */
export interface CompleteToken {
  header: { typ?: string };
  payload: Record<string, unknown>;
}

/**
 * The HMAC key as a KeyObject. Given a string, jsonwebtoken first tries to parse it as a PEM public
 * key and only then falls back to a secret key: that failed parse cost about half the CPU of a
 * device request (measured with --cpu-prof under `npm run bench`).
 */
export function hmacKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

/**
 * The token of `Authorization: Bearer <token>`, the scheme name in any case (RFC 7235), else null.
 * Exactly two parts: passport-jwt's own extractor also took `Bearer <token> <anything>`.
 */
export function bearerTokenOf(authorization: string | undefined): string | null {
  const match = /^(\S+)\s+(\S+)$/.exec(authorization ?? '');
  return match && match[1].toLowerCase() === 'bearer' ? match[2] : null;
}

/** Verification shared by both kinds of access token: bearer header, HS256 only, issuer, audience, expiry. */
export function accessTokenOptions(secret: string, audience: string): StrategyOptionsWithoutRequest {
  return {
    jwtFromRequest: (request: { headers: Record<string, string | string[] | undefined> }) => {
      const authorization = request.headers.authorization;
      return bearerTokenOf(typeof authorization === 'string' ? authorization : undefined);
    },
    // passport-jwt hands the key to jsonwebtoken unchanged; its typings predate KeyObject.
    secretOrKey: hmacKey(secret) as unknown as string,
    algorithms: ['HS256'],
    audience,
    issuer: TOKEN_ISSUER,
    ignoreExpiration: false,
    jsonWebTokenOptions: { complete: true, clockTolerance: 5 },
  };
}

/**
 * The same checks as the passport strategies (bearer header, HS256 only, issuer, audience, expiry),
 * for the few places that run before Nest's guard (NotModifiedShortcuts). Null when not valid.
 */
export function verifyBearer(authorization: string | undefined, key: KeyObject, audience: string): CompleteToken | null {
  const token = bearerTokenOf(authorization);
  if (!token) return null;
  try {
    return jwt.verify(token, key, { algorithms: ['HS256'], audience, issuer: TOKEN_ISSUER, clockTolerance: 5, complete: true }) as unknown as CompleteToken;
  } catch {
    return null;
  }
}

/** The subject and token version of an access token, after checking its type header. */
export function subjectOf(token: CompleteToken): { sub: string; tv: number } {
  const { header, payload } = token;
  if (header.typ !== ACCESS_TOKEN_TYPE || typeof payload.sub !== 'string' || typeof payload.tv !== 'number') {
    throw new UnauthorizedError('The token is not an access token of this kind.');
  }
  return { sub: payload.sub, tv: payload.tv };
}
