import jwt from 'jsonwebtoken';
import { ACCESS_TOKEN_TYPE, DEVICE_TOKEN_AUDIENCE, TOKEN_ISSUER } from '../shared/auth-tokens/access-tokens.js';
import { CLOCK_TOLERANCE_SEC, hmacKey, VerifiedTokens } from './access-token.js';

const SECRET = 'device-secret-for-unit-tests-0123456789';
const key = hmacKey(SECRET);

function bearer(claims: { sub: string; ttlSec?: number; secret?: string; audience?: string }): string {
  const token = jwt.sign({ sub: claims.sub, tv: 1 }, claims.secret ?? SECRET, {
    algorithm: 'HS256',
    audience: claims.audience ?? DEVICE_TOKEN_AUDIENCE,
    issuer: TOKEN_ISSUER,
    expiresIn: claims.ttlSec ?? 60,
    header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
  });
  return `Bearer ${token}`;
}

describe('VerifiedTokens', () => {
  it('accepts a valid token, and again from memory', () => {
    const tokens = new VerifiedTokens(key, DEVICE_TOKEN_AUDIENCE);
    const authorization = bearer({ sub: 'gw-1' });

    expect(tokens.verify(authorization)?.payload.sub).toBe('gw-1');
    expect(tokens.verify(authorization)?.payload.sub).toBe('gw-1');
    expect(tokens.size).toBe(1);
  });

  it('refuses, and does not remember, what the passport strategy refuses', () => {
    const tokens = new VerifiedTokens(key, DEVICE_TOKEN_AUDIENCE);
    const forged = bearer({ sub: 'gw-1', secret: 'another-secret-of-enough-length-0123' });
    const otherAudience = bearer({ sub: 'gw-1', audience: 'device-cloud:customer' });
    const expired = bearer({ sub: 'gw-1', ttlSec: -CLOCK_TOLERANCE_SEC - 1 });

    for (const authorization of [forged, otherAudience, expired, undefined, 'Basic abc', `Bearer ${'x'.repeat(40)}`]) {
      expect(tokens.verify(authorization)).toBeNull();
      expect(tokens.verify(authorization)).toBeNull();
    }
    expect(tokens.size).toBe(0);
  });

  it('a remembered token is refused once it has expired', () => {
    const tokens = new VerifiedTokens(key, DEVICE_TOKEN_AUDIENCE);
    const authorization = bearer({ sub: 'gw-1', ttlSec: 60 });
    const exp = (tokens.verify(authorization)?.payload.exp as number) * 1000;

    expect(tokens.verify(authorization, exp + CLOCK_TOLERANCE_SEC * 1000 - 1)?.payload.sub).toBe('gw-1');
    expect(tokens.verify(authorization, exp + CLOCK_TOLERANCE_SEC * 1000)).toBeNull();
    expect(tokens.size).toBe(0);
  });

  it('keeps at most its capacity, forgetting the oldest first', () => {
    const tokens = new VerifiedTokens(key, DEVICE_TOKEN_AUDIENCE, 2);
    const [first, second, third] = ['gw-1', 'gw-2', 'gw-3'].map((sub) => bearer({ sub }));

    for (const authorization of [first, second, third]) expect(tokens.verify(authorization)).not.toBeNull();

    expect(tokens.size).toBe(2);
    // The forgotten token is verified afresh, and is still good.
    expect(tokens.verify(first)?.payload.sub).toBe('gw-1');
    expect(tokens.size).toBe(2);
  });
});
