import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import type { Device } from '../domain/device.js';
import { DeviceRepository } from '../domain/device.repository.js';

export const DEVICE_TOKEN_AUDIENCE = 'device-cloud:device';
export const TOKEN_ISSUER = 'device-cloud';
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Prefix that makes a leaked device refresh token recognisable to secret scanners. */
const REFRESH_TOKEN_PREFIX = 'dcr_';

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
  constructor(
    private readonly jwt: JwtService,
    private readonly devices: DeviceRepository,
    private readonly hasher: SecretHasher,
    private readonly env: Env,
  ) {}

  async issue(device: Device, now: Date): Promise<TokenPair> {
    const claims: DeviceTokenClaims = { sub: device.deviceId, tv: device.tokenVersion };
    const accessToken = await this.jwt.signAsync(claims, {
      audience: DEVICE_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC,
      algorithm: 'HS256',
      header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
    });
    const refreshToken = REFRESH_TOKEN_PREFIX + SecretHasher.randomToken();
    await this.devices.insertRefreshToken({
      deviceId: device.deviceId,
      tokenVersion: device.tokenVersion,
      tokenHash: this.hasher.hmac(refreshToken),
      expiresAt: new Date(now.getTime() + this.env.DEVICE_REFRESH_TOKEN_TTL_DAYS * 86_400_000),
    });
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: this.env.DEVICE_ACCESS_TOKEN_TTL_SEC };
  }
}
