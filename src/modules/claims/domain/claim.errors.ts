import { DomainError } from '../../../shared/domain-error.js';

export class EmailNotVerifiedError extends DomainError {
  constructor() {
    super('EMAIL_NOT_VERIFIED', 'forbidden', 'Verify your e-mail address before claiming a device.');
  }
}

/** Same answer for an unknown device and a wrong code or secret, so device ids cannot be probed. */
export class InvalidClaimError extends DomainError {
  constructor() {
    super('INVALID_CLAIM', 'unauthorized', 'The device id, claim code or device secret is not valid.');
  }
}

export class DeviceAlreadyClaimedError extends DomainError {
  constructor() {
    super('DEVICE_ALREADY_CLAIMED', 'conflict', 'The device is claimed by another account.');
  }
}

export class ClaimCodeMissingError extends DomainError {
  constructor() {
    super('CLAIM_CODE_REQUIRED', 'invalid', 'This device is claimed with its claim code.', {
      errors: [{ field: 'claimCode', message: 'claimCode is required for this device' }],
    });
  }
}

export class DeviceSecretRequiredError extends DomainError {
  constructor() {
    super('DEVICE_SECRET_REQUIRED', 'invalid', 'This device predates claim codes and is claimed with its device secret.', {
      errors: [{ field: 'deviceSecret', message: 'deviceSecret is required for this device' }],
    });
  }
}

/** An administrator's transfer names an address without an account, or one not verified yet. */
export class TransferRecipientInvalidError extends DomainError {
  constructor(reason: string, field: 'toEmail' | 'toOrganizationId' = 'toEmail') {
    super('TRANSFER_RECIPIENT_INVALID', 'unprocessable', reason, { errors: [{ field, message: reason }] });
  }
}
