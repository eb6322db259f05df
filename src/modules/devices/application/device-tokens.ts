import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Env } from '../../../config/env.js';
import { RefreshTokenStore } from '../../../shared/auth-tokens/refresh-token-store.js';
import { RefreshTokens, type RotatedToken, type TokenSubject } from '../../../shared/auth-tokens/refresh-tokens.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import type { Device } from '../domain/device.js';

export const DEVICE_TOKEN_AUDIENCE = 'device-cloud:device';
export const TOKEN_ISSUER = 'device-cloud';
export const ACCESS_TOKEN_TYPE = 'at+jwt';

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

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
    this.refreshTokens = new RefreshTokens(store, hasher, { prefix: 'dcr_', ttlDays: env.DEVICE_REFRESH_TOKEN_TTL_DAYS });
  }

  /** A token pair for the device's current token version, or for `tokenVersion` (a rotation's). */
  async issue(device: Device, now: Date, tokenVersion = device.tokenVersion): Promise<TokenPair> {
    const claims: DeviceTokenClaims = { sub: device.deviceId, tv: tokenVersion };
    const accessToken = await this.jwt.signAsync(claims, {
      audience: DEVICE_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC,
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
    });
    const refreshToken = await this.refreshTokens.issue(device.deviceId, tokenVersion, now);
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC };
  }

  rotate(refreshToken: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    return this.refreshTokens.rotate(refreshToken, now, subject);
  }

  revokeAllOf(deviceId: string, now: Date): Promise<void> {
    return this.refreshTokens.revokeAllOf(deviceId, now);
  }
}
