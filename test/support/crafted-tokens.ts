import jwt, { type Algorithm } from 'jsonwebtoken';

/** What a test changes in an otherwise valid access token; a claim set to undefined is left out. */
export interface TokenSpec {
  payload?: Record<string, unknown>;
  header?: Record<string, unknown>;
  secret?: string;
  algorithm?: Algorithm;
}

export const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * An access token made by the test, signed as the service signs them (HS256, typ at+jwt, issued
 * now, 5 minutes to live) with `claims` as the kind-specific claims, unless the spec changes it.
 * The payload is signed exactly as given: jsonwebtoken neither adds an iat nor checks the claims.
 */
export function craftAccessToken(claims: Record<string, unknown>, secret: string, spec: TokenSpec = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const payload = Object.fromEntries(
    Object.entries({ tv: 1, iss: 'device-cloud', iat: now, exp: now + 300, ...claims, ...spec.payload }).filter(([, value]) => value !== undefined),
  );
  const algorithm = spec.algorithm ?? 'HS256';
  return jwt.sign(JSON.stringify(payload), spec.secret ?? secret, { algorithm, header: { alg: algorithm, typ: 'at+jwt', ...spec.header } });
}
