import type { JwtService } from '@nestjs/jwt';

export const TOKEN_ISSUER = 'device-cloud';
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Each kind of access token has its own key and audience; one is never accepted as the other. */
export const DEVICE_TOKEN_AUDIENCE = 'device-cloud:device';
export const CUSTOMER_TOKEN_AUDIENCE = 'device-cloud:customer';

/** What a login, a registration or a refresh hands out, devices and customers alike. */
export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

/**
 * Signs an access token of either kind (HS256, `typ: at+jwt`) as issued at `issuedAt`. jsonwebtoken
 * counts `exp` from the `iat` given here, so the same claims and time give the same token byte for
 * byte: what a refresh repeated within the reuse grace must get again.
 */
export function signAccessToken(jwt: JwtService, claims: object, { audience, ttlSec, issuedAt }: { audience: string; ttlSec: number; issuedAt: Date }): Promise<string> {
  return jwt.signAsync(
    { ...claims, iat: Math.floor(issuedAt.getTime() / 1000) },
    { audience, issuer: TOKEN_ISSUER, expiresIn: ttlSec, algorithm: 'HS256', header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE } },
  );
}
