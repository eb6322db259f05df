/**
 * Who a request comes from, as the guards hand it to controllers, and the ports through which the
 * guards look principals up. The modules implement the ports (devices: DeviceAuthenticator,
 * accounts: CustomerAuthenticator), so auth depends on no module.
 */

/** A gateway whose access token is valid for its current credentials. */
export class DevicePrincipal {
  constructor(readonly deviceId: string) {}
}

/** The session a customer token belongs to: enough to check it again later (a stream ticket does). */
export interface CustomerSession {
  sub: string;
  tv: number;
  sid: string;
}

/** What an API key may do: `read` on the routes that take any key, `write` also on those that take write keys. */
export type ApiKeyScope = 'read' | 'write';

export const API_KEY_SCOPES: readonly ApiKeyScope[] = ['read', 'write'];

/** How an API key starts: the guard tells it from a JWT (always `eyJ…`) by this alone. */
export const API_KEY_PREFIX = 'dck_';

/** A signed-in customer or administrator, as the database says now. */
export class CustomerPrincipal {
  constructor(
    readonly userId: string,
    readonly role: 'customer' | 'admin',
    readonly emailVerified: boolean,
    /** The session the request came through; null where no token was involved (unit tests, API keys). */
    readonly session: CustomerSession | null = null,
    /**
     * The API key the request came with; null for an access token. An organization's key
     * (`holder: 'organization'`) acts as the organization: `userId` is then the organization's id.
     */
    readonly apiKey: { keyId: string; scope: ApiKeyScope; holder: 'user' | 'organization' } | null = null,
  ) {}

  get isAdmin(): boolean {
    return this.role === 'admin';
  }
}

/** Port: the device behind a verified device access token, refused when its credentials changed. */
export abstract class DeviceAuthenticator {
  abstract authenticate(claims: { sub: string; tv: number }): Promise<DevicePrincipal>;
}

/** Port: the customer behind a verified customer access token, refused when revoked or logged out. */
export abstract class CustomerAuthenticator {
  abstract authenticate(claims: CustomerSession): Promise<CustomerPrincipal>;
}

/**
 * Port: the customer behind a stream ticket (`?ticket=`, for browsers' EventSource, which cannot
 * send an Authorization header). Implemented by the stream module.
 */
export abstract class StreamTicketAuthenticator {
  abstract authenticate(ticket: string, clientAddress: string): Promise<CustomerPrincipal>;
}

/**
 * Port: the customer behind an API key (`Authorization: Bearer dck_…`), refused (401) when unknown
 * or revoked, 429 while the client address has too many failed key checks. Implemented by the
 * api-keys module.
 */
export abstract class ApiKeyAuthenticator {
  abstract authenticate(key: string, clientAddress: string): Promise<CustomerPrincipal>;
}
