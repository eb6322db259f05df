import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Env } from '../../../config/env.js';
import { RefreshTokenStore } from '../../../shared/auth-tokens/refresh-token-store.js';
import { RefreshTokens, type RotatedToken, type TokenSubject } from '../../../shared/auth-tokens/refresh-tokens.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { CUSTOMER_TOKEN_AUDIENCE, signAccessToken, type TokenPair } from '../../../shared/auth-tokens/access-tokens.js';
import type { Role, User } from '../domain/user.js';

export { CUSTOMER_TOKEN_AUDIENCE } from '../../../shared/auth-tokens/access-tokens.js';

/** Claims of a customer access token. `sid` is the session: the refresh-token family it was issued with. */
export interface CustomerTokenClaims {
  sub: string;
  tv: number;
  sid: string;
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
    this.refreshTokens = new RefreshTokens(store, hasher, {
      prefix: 'ucr_',
      ttlDays: env.CUSTOMER_REFRESH_TOKEN_TTL_DAYS,
      reuseGraceSec: env.REFRESH_REUSE_GRACE_SEC,
    });
  }

  /** A token pair opening a new session for the user's current token version. */
  async issue(user: User, now: Date): Promise<TokenPair> {
    const sid = randomUUID();
    const accessToken = await this.accessToken({ sub: user.id, tv: user.tokenVersion, sid, role: user.role }, now);
    const refreshToken = await this.refreshTokens.issue(user.id, user.tokenVersion, now, sid);
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: this.env.CUSTOMER_ACCESS_TOKEN_TTL_SEC };
  }

  rotate(refreshToken: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    return this.refreshTokens.rotate(refreshToken, now, subject);
  }

  /**
   * The pair of a rotation, in the same session: its successor, and an access token issued at the
   * rotation time, so a repeat within the reuse grace gets the same pair byte for byte.
   */
  async pairOf(rotated: RotatedToken, role: Role): Promise<TokenPair> {
    const claims: CustomerTokenClaims = { sub: rotated.subjectId, tv: rotated.tokenVersion, sid: rotated.familyId, role };
    const accessToken = await this.accessToken(claims, rotated.rotatedAt);
    return { accessToken, refreshToken: rotated.refreshToken, tokenType: 'Bearer', expiresIn: this.env.CUSTOMER_ACCESS_TOKEN_TTL_SEC };
  }

  /** Logout: ends the session of the token, its refresh tokens and (through `sid`) its access tokens. */
  revokeSession(refreshToken: string, now: Date): Promise<void> {
    return this.refreshTokens.revokeSession(refreshToken, now);
  }

  revokeAllOf(userId: string, now: Date): Promise<void> {
    return this.refreshTokens.revokeAllOf(userId, now);
  }

  private accessToken(claims: CustomerTokenClaims, issuedAt: Date): Promise<string> {
    return signAccessToken(this.jwt, claims, { audience: CUSTOMER_TOKEN_AUDIENCE, ttlSec: this.env.CUSTOMER_ACCESS_TOKEN_TTL_SEC, issuedAt });
  }
}
