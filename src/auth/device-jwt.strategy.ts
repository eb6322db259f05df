import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-jwt';
import { Secrets } from '../config/secrets.js';
import { DEVICE_TOKEN_AUDIENCE } from '../shared/auth-tokens/access-tokens.js';
import { DeviceAuthenticator, DevicePrincipal } from './principals.js';
import { accessTokenOptions, subjectOf, type CompleteToken } from './access-token.js';

/** Device access tokens: device key and audience, and the device's current token version. */
@Injectable()
export class DeviceJwtStrategy extends PassportStrategy(Strategy, 'device-jwt') {
  constructor(
    secrets: Secrets,
    private readonly devices: DeviceAuthenticator,
  ) {
    super(accessTokenOptions(secrets.deviceJwtSecret, DEVICE_TOKEN_AUDIENCE));
  }

  validate(token: CompleteToken): Promise<DevicePrincipal> {
    return this.devices.authenticate(subjectOf(token));
  }
}
