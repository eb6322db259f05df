import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Env } from '../../../config/env.js';
import { DEVICE_TOKEN_AUDIENCE, signAccessToken, type TokenPair } from '../../../shared/auth-tokens/access-tokens.js';
import { RefreshTokenStore } from '../../../shared/auth-tokens/refresh-token-store.js';
import { RefreshTokens, type RotatedToken, type TokenSubject } from '../../../shared/auth-tokens/refresh-tokens.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import type { Device } from '../domain/device.js';

export { ACCESS_TOKEN_TYPE, DEVICE_TOKEN_AUDIENCE, TOKEN_ISSUER, type TokenPair } from '../../../shared/auth-tokens/access-tokens.js';

/** Claims of a device access token. `tv` is the device's token version when it was issued. */
export interface DeviceTokenClaims {
  sub: string;
  tv: number;
}

@Injectable()
export class DeviceTokens {
  private readonly refreshTokens: RefreshTokens;

  constructor(
    private readonly jwt: JwtService,
    store: RefreshTokenStore,
    hasher: SecretHasher,
    private readonly env: Env,
  ) {
    this.refreshTokens = new RefreshTokens(store, hasher, {
      prefix: 'dcr_',
      ttlDays: env.DEVICE_REFRESH_TOKEN_TTL_DAYS,
      reuseGraceSec: env.REFRESH_REUSE_GRACE_SEC,
    });
  }

  /** A token pair opening a session for the device's current token version. */
  async issue(device: Device, now: Date): Promise<TokenPair> {
    const accessToken = await this.accessToken({ sub: device.deviceId, tv: device.tokenVersion }, now);
    const refreshToken = await this.refreshTokens.issue(device.deviceId, device.tokenVersion, now);
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC };
  }

  rotate(refreshToken: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    return this.refreshTokens.rotate(refreshToken, now, subject);
  }

  /**
   * The pair of a rotation: its successor, and an access token issued at the rotation time, so a
   * repeat within the reuse grace gets the same pair byte for byte.
   */
  async pairOf(rotated: RotatedToken): Promise<TokenPair> {
    const accessToken = await this.accessToken({ sub: rotated.subjectId, tv: rotated.tokenVersion }, rotated.rotatedAt);
    return { accessToken, refreshToken: rotated.refreshToken, tokenType: 'Bearer', expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC };
  }

  revokeAllOf(deviceId: string, now: Date): Promise<void> {
    return this.refreshTokens.revokeAllOf(deviceId, now);
  }

  private accessToken(claims: DeviceTokenClaims, issuedAt: Date): Promise<string> {
    return signAccessToken(this.jwt, claims, { audience: DEVICE_TOKEN_AUDIENCE, ttlSec: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC, issuedAt });
  }
}
