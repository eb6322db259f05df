import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Secrets } from '../config/secrets.js';
import { NotModifiedShortcuts } from '../shared/http/not-modified.js';
import { DEVICE_TOKEN_AUDIENCE } from '../shared/auth-tokens/access-tokens.js';
import { DeviceAuthenticator } from './principals.js';
import { hmacKey, subjectOf, VerifiedTokens } from './access-token.js';

/** Gives NotModifiedShortcuts the device guard's checks: signature and claims (remembered per token until it expires), then token version. */
@Injectable()
export class DevicePollAuth implements OnModuleInit {
  private readonly tokens;

  constructor(
    secrets: Secrets,
    private readonly devices: DeviceAuthenticator,
    private readonly shortcuts: NotModifiedShortcuts,
  ) {
    this.tokens = new VerifiedTokens(hmacKey(secrets.deviceJwtSecret), DEVICE_TOKEN_AUDIENCE);
  }

  onModuleInit(): void {
    this.shortcuts.useDeviceAuthentication(async (authorization) => {
      const token = this.tokens.verify(authorization);
      if (!token) return null;
      return (await this.devices.authenticate(subjectOf(token))).deviceId;
    });
  }
}
