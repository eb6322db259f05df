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


export class RegistrationNotAllowedError extends DomainError {
  constructor() {
    super('REGISTRATION_NOT_ALLOWED', 'forbidden', 'This deviceId and hardwareId are not on the registration allowlist.');
  }
}

export class ClaimCodeAlreadySetError extends DomainError {
  constructor() {
    super('CLAIM_CODE_ALREADY_SET', 'conflict', 'The device already has a claim code.');
  }
}

/** Until an administrator re-opens it (POST /api/v1/admin/devices/{deviceId}/reopen), a decommissioned device may not register. */
export class DeviceDecommissionedError extends DomainError {
  constructor() {
    super('DEVICE_DECOMMISSIONED', 'conflict', 'This device was decommissioned: it may register again only after an administrator re-opens it.');
  }
}
