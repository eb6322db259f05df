import { DomainError } from '../../../shared/domain-error.js';

export class ClaimCodeRequiredError extends DomainError {
  constructor() {
    super('CLAIM_CODE_REQUIRED', 'invalid', 'Firmware 0.1.4 and later must send a claimCode at registration.', {
      errors: [{ field: 'claimCode', message: 'claimCode is required when firmwareVersion is 0.1.4 or later' }],
    });
  }
}

export class DeviceAlreadyRegisteredError extends DomainError {
  constructor() {
    super('DEVICE_ALREADY_REGISTERED', 'conflict', 'A device with this deviceId is already registered.');
  }
}

/** Same answer for an unknown device and a wrong secret, so device ids cannot be enumerated. */
export class InvalidCredentialsError extends DomainError {
  constructor() {
    super('INVALID_CREDENTIALS', 'unauthorized', 'The device id or secret is not valid.');
  }
}

export class InvalidRefreshTokenError extends DomainError {
  constructor() {
    super('INVALID_TOKEN', 'unauthorized', 'The refresh token is not valid, expired, or was already used.');
  }
}
