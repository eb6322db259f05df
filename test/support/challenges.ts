/** WWW-Authenticate of a 401 without a bearer token (none, or another scheme): RFC 6750 §3, no error. */
export const NO_TOKEN_CHALLENGE = 'Bearer realm="device-cloud"';

/** WWW-Authenticate of a 401 refusing the bearer token that was sent (bad, expired, revoked, other kind). */
export const INVALID_TOKEN_CHALLENGE = 'Bearer realm="device-cloud", error="invalid_token"';
