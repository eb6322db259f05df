import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Env } from '../../../config/env.js';
import { RefreshTokenStore } from '../../../shared/auth-tokens/refresh-token-store.js';
import { RefreshTokens, type RotatedToken, type TokenSubject } from '../../../shared/auth-tokens/refresh-tokens.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { ACCESS_TOKEN_TYPE, TOKEN_ISSUER, type TokenPair } from '../../devices/application/device-tokens.js';
import type { Role, User } from '../domain/user.js';

export const CUSTOMER_TOKEN_AUDIENCE = 'device-cloud:customer';

export interface CustomerTokenClaims {
  sub: string;
  tv: number;
  role: Role;
}

@Injectable()
export class UserTokens {
  private readonly refreshTokens: RefreshTokens;

  constructor(
    private readonly jwt: JwtService,
    private readonly env: Env,
    store: RefreshTokenStore,
    hasher: SecretHasher,
  ) {
    this.refreshTokens = new RefreshTokens(store, hasher, { prefix: 'ucr_', ttlDays: env.CUSTOMER_REFRESH_TOKEN_TTL_DAYS });
  }

  /** A token pair for the user's current token version, or for `tokenVersion` (a rotation's). */
  async issue(user: User, now: Date, tokenVersion = user.tokenVersion): Promise<TokenPair> {
    const claims: CustomerTokenClaims = { sub: user.id, tv: tokenVersion, role: user.role };
    const accessToken = await this.jwt.signAsync(claims, {
      audience: CUSTOMER_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      expiresIn: this.env.CUSTOMER_ACCESS_TOKEN_TTL_SEC,
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
    });
    const refreshToken = await this.refreshTokens.issue(user.id, tokenVersion, now);
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: this.env.CUSTOMER_ACCESS_TOKEN_TTL_SEC };
  }

  rotate(refreshToken: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    return this.refreshTokens.rotate(refreshToken, now, subject);
  }

  revoke(refreshToken: string, now: Date): Promise<void> {
    return this.refreshTokens.revoke(refreshToken, now);
  }

  revokeAllOf(userId: string, now: Date): Promise<void> {
    return this.refreshTokens.revokeAllOf(userId, now);
  }
}
