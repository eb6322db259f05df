/**
 * Title of every problem code the API can answer with. Codes are part of the contract:
 * clients branch on them, so a code is never renamed or reused for another meaning.
 */
const TITLES = {
  VALIDATION_FAILED: 'The request is not valid',
  MALFORMED_BODY: 'The request body is not well-formed JSON',
  PAYLOAD_TOO_LARGE: 'The request body is too large',
  UNSUPPORTED_MEDIA_TYPE: 'The request content type is not supported',
  CLAIM_CODE_REQUIRED: 'A claim code is required',
  UNAUTHORIZED: 'Authentication is required',
  INVALID_CREDENTIALS: 'The credentials are not valid',
  INVALID_TOKEN: 'The token is not valid',
  FORBIDDEN: 'Not allowed',
  API_KEY_SCOPE: 'This operation does not accept this API key',
  SHARE_ROLE: 'Your role on this device does not allow this change',
  TOO_MANY_SHARES: 'Too many shares of this device',
  ORGANIZATION_ROLE: 'Your role in this organization does not allow this',
  LAST_OWNER: 'An organization keeps at least one owner',
  PERSONAL_ORGANIZATION: 'Your personal organization stays yours',
  ORGANIZATION_NOT_EMPTY: 'The organization owns devices',
  TOO_MANY_API_KEYS: 'Too many API keys',
  NOT_FOUND: 'Not found',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  DEVICE_ALREADY_REGISTERED: 'The device is already registered',
  TOO_MANY_WEBHOOKS: 'Too many webhooks',
  WEBHOOK_DISABLED: 'The webhook is disabled',
  INVALID_ALERT_RULE: 'The alert rules are not valid',
  WEBHOOK_URL_NOT_ALLOWED: 'The webhook URL is not allowed',
  PASSWORD_TOO_COMMON: 'The password is too easy to guess',
  EMAIL_NOT_VERIFIED: 'The e-mail address is not verified',
  INVALID_CLAIM: 'The claim is not valid',
  DEVICE_ALREADY_CLAIMED: 'The device is claimed by another account',
  DEVICE_SECRET_REQUIRED: 'The device secret is required',
  CLAIM_CODE_ALREADY_SET: 'The device already has a claim code',
  REGISTRATION_NOT_ALLOWED: 'The device is not allowed to register',
  PRECONDITION_FAILED: 'The resource changed since the version you read',
  CONFIG_VERSION_UNKNOWN: 'The configuration version is not one this device was given',
  FIRMWARE_RELEASE_EXISTS: 'A release with this version, hardware and channel exists',
  FIRMWARE_SIGNATURE_REQUIRED: 'Releases must be signed',
  FIRMWARE_SIGNATURE_INVALID: 'The signature does not verify',
  SIGNING_KEY_UNKNOWN: 'No signing key has this id',
  SIGNING_KEY_REVOKED: 'The signing key is revoked',
  SIGNING_KEY_EXISTS: 'A different signing key has this id',
  FIRMWARE_IMAGE_MISMATCH: 'The image is not the one the release names',
  FIRMWARE_IMAGE_NOT_HOSTED: 'The release has its image elsewhere',
  RANGE_NOT_SATISFIABLE: 'The range lies beyond the end of the image',
  DEVICE_DECOMMISSIONED: 'The device is decommissioned',
  TRANSFER_RECIPIENT_INVALID: 'The device cannot be transferred to this account',
  RATE_LIMITED: 'Too many requests',
  TOO_MANY_STREAMS: 'Too many open streams',
  TOO_MANY_EXPORTS: 'Too many exports running',
  TOO_MANY_COMMANDS: 'Too many commands wait for this device',
  COMMAND_NOT_QUEUED: 'The command is no longer queued',
  COMMAND_FINISHED: 'The command has ended already',
  LOG_QUOTA_EXCEEDED: 'The device stored its log quota for today',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable',
  INTERNAL_ERROR: 'Internal error',
} as const;

export type ProblemCode = keyof typeof TITLES;

/** Every code, in the order above: the `code` enum of the OpenAPI document (ProblemCode). */
export const PROBLEM_CODES = Object.keys(TITLES) as ProblemCode[];

export const PROBLEM_TITLES: Readonly<Record<string, string>> = TITLES;

export function problemType(code: string): string {
  return `urn:device-cloud:problem:${code.toLowerCase().replaceAll('_', '-')}`;
}
