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
 * The same checks as the passport strategies (HS256 only, issuer, audience, expiry), for the few
 * places that run before Nest's guard (NotModifiedShortcuts). Null when not valid.
 */
function verifyToken(token: string, key: KeyObject, audience: string): CompleteToken | null {
  try {
    return jwt.verify(token, key, { algorithms: ['HS256'], audience, issuer: TOKEN_ISSUER, clockTolerance: CLOCK_TOLERANCE_SEC, complete: true }) as unknown as CompleteToken;
  } catch {
    return null;
  }
}

/**
 * The bearer token of an Authorization header, verified as the passport strategies verify it, with
 * a memory: tokens that passed, by their text, until they expire. A gateway
 * polls with the same token for its whole life, and checking its signature again (an HMAC, base64
 * decoding and two JSON parses) was a fifth of the CPU of a 304 poll (bench S4 profile). What
 * passed once passes again — the same text has the same signature, issuer, audience and times —
 * except for expiry, which is checked on every use, as jsonwebtoken checks it; the token version
 * is the caller's to check against the device, as before. Only verified tokens are kept, the
 * oldest leaves when it is full.
 */
export class VerifiedTokens {
  private readonly tokens = new Map<string, { token: CompleteToken; validUntilMs: number }>();

  constructor(
    private readonly key: KeyObject,
    private readonly audience: string,
    private readonly capacity = 4096,
  ) {}

  verify(authorization: string | undefined, nowMs = Date.now()): CompleteToken | null {
    const text = bearerTokenOf(authorization);
    if (!text) return null;
    const known = this.tokens.get(text);
    if (known) {
      if (nowMs < known.validUntilMs) return known.token;
      this.tokens.delete(text);
      return null;
    }
    const token = verifyToken(text, this.key, this.audience);
    const exp = token?.payload.exp;
    if (!token || typeof exp !== 'number') return token;
    if (this.tokens.size >= this.capacity) this.tokens.delete(this.tokens.keys().next().value as string);
    this.tokens.set(text, { token, validUntilMs: (exp + CLOCK_TOLERANCE_SEC) * 1000 });
    return token;
  }

  get size(): number {
    return this.tokens.size;
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
  // Tokens signed before sessions existed have no sid: refused, and the client refreshes (docs/api.md).
  if (typeof sid !== 'string' || !UUID.test(sid)) throw new UnauthorizedError('The token names no session.');
  return { ...subject, sid };
}
