import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Secrets } from '../config/secrets.js';
import { NotModifiedShortcuts } from '../shared/http/not-modified.js';
import { DEVICE_TOKEN_AUDIENCE } from '../shared/auth-tokens/access-tokens.js';
import { DeviceAuthenticator } from './principals.js';
import { hmacKey, subjectOf, verifyBearer } from './access-token.js';

/** Gives NotModifiedShortcuts the device guard's checks: signature and claims, then token version. */
@Injectable()
export class DevicePollAuth implements OnModuleInit {
  private readonly key;

  constructor(
    secrets: Secrets,
    private readonly devices: DeviceAuthenticator,
    private readonly shortcuts: NotModifiedShortcuts,
  ) {
    this.key = hmacKey(secrets.deviceJwtSecret);
  }

  onModuleInit(): void {
    this.shortcuts.useDeviceAuthentication(async (authorization) => {
      const token = verifyBearer(authorization, this.key, DEVICE_TOKEN_AUDIENCE);
      if (!token) return null;
      return (await this.devices.authenticate(subjectOf(token))).deviceId;
    });
  }
}
