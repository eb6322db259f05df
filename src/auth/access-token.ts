import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { StrategyOptionsWithoutRequest } from 'passport-jwt';
import { ACCESS_TOKEN_TYPE, TOKEN_ISSUER } from '../shared/auth-tokens/access-tokens.js';
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

/** Leeway for exp, nbf and iat: clocks of the instances that sign and verify differ a little. */
export const CLOCK_TOLERANCE_SEC = 5;

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
    jsonWebTokenOptions: { complete: true, clockTolerance: CLOCK_TOLERANCE_SEC },
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
    return jwt.verify(token, key, { algorithms: ['HS256'], audience, issuer: TOKEN_ISSUER, clockTolerance: CLOCK_TOLERANCE_SEC, complete: true }) as unknown as CompleteToken;
  } catch {
    return null;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The subject and token version of an access token, after checking its type header and its times.
 * jsonwebtoken checks exp only when present: every token the service signs has exp and iat (RFC
 * 8725), so one without is not ours to accept, nor one issued in the future.
 */
export function subjectOf(token: CompleteToken, nowMs = Date.now()): { sub: string; tv: number } {
  const { header, payload } = token;
  if (header.typ !== ACCESS_TOKEN_TYPE || typeof payload.sub !== 'string' || typeof payload.tv !== 'number') {
    throw new UnauthorizedError('The token is not an access token of this kind.');
  }
  if (!Number.isFinite(payload.exp) || !Number.isFinite(payload.iat)) throw new UnauthorizedError('The token has no expiry or issue time.');
  if ((payload.iat as number) > nowMs / 1000 + CLOCK_TOLERANCE_SEC) throw new UnauthorizedError('The token was issued in the future.');
  return { sub: payload.sub, tv: payload.tv };
}

/** A customer access token's subject, token version and session (`sid`, the refresh-token family). */
export function sessionOf(token: CompleteToken, nowMs = Date.now()): { sub: string; tv: number; sid: string } {
  const subject = subjectOf(token, nowMs);
  const sid = token.payload.sid;
  // Tokens signed before sessions existed have no sid: refused, and the client refreshes (README).
  if (typeof sid !== 'string' || !UUID.test(sid)) throw new UnauthorizedError('The token names no session.');
  return { ...subject, sid };
}
