import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { Secrets } from '../config/secrets.js';
import { ACCESS_TOKEN_TYPE, DEVICE_TOKEN_AUDIENCE, TOKEN_ISSUER, type DeviceTokenClaims } from '../modules/devices/application/device-tokens.js';
import { DevicePrincipal, DevicesService } from '../modules/devices/application/devices.service.js';
import { UnauthorizedError } from '../shared/domain-error.js';

interface CompleteToken {
  header: { typ?: string };
  payload: Partial<DeviceTokenClaims> & Record<string, unknown>;
}

/** Verifies device access tokens: HS256 only, device audience, issuer, expiry, type, token version. */
@Injectable()
export class DeviceJwtStrategy extends PassportStrategy(Strategy, 'device-jwt') {
  constructor(
    secrets: Secrets,
    private readonly devices: DevicesService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: secrets.deviceJwtSecret,
      algorithms: ['HS256'],
      audience: DEVICE_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      ignoreExpiration: false,
      jsonWebTokenOptions: { complete: true, clockTolerance: 5 },
    });
  }

  async validate(token: CompleteToken): Promise<DevicePrincipal> {
    const { header, payload } = token;
    if (header.typ !== ACCESS_TOKEN_TYPE || typeof payload.sub !== 'string' || typeof payload.tv !== 'number') {
      throw new UnauthorizedError('The token is not a device access token.');
    }
    return this.devices.authenticate({ sub: payload.sub, tv: payload.tv });
  }
}
