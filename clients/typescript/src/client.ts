import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { DeviceCloudProblem, unwrap } from './problem.js';
import type { paths } from './schema.js';
import { CustomerSession, sessionMiddleware, type CustomerSessionOptions } from './session.js';

export interface DeviceCloudClientOptions extends ClientOptions {
  /** The service's origin, e.g. https://cloud.example.com (the paths start with /api/v1). */
  baseUrl: string;
  /** Where the customer's tokens come from and go to; default: in memory, signed out. */
  session?: CustomerSessionOptions;
  /**
   * The session ended: a refresh was refused (logged out elsewhere, revoked, timed out). The call
   * that found out answers its 401; show the sign-in form.
   */
  onSessionExpired?(problem: DeviceCloudProblem): void;
}

/** The openapi-fetch client over the service's paths, with the customer session it authenticates with. */
export type DeviceCloudClient = Client<paths> & {
  readonly baseUrl: string;
  readonly session: CustomerSession;
};

/**
 * A typed client of the Device Cloud Service. Calls without an Authorization header of their own
 * carry the session's access token (once signed in), refreshed once when the service refuses it;
 * device calls pass their token in `headers` and are left alone.
 */
export function createDeviceCloudClient(options: DeviceCloudClientOptions): DeviceCloudClient {
  const { session: sessionOptions, onSessionExpired, ...clientOptions } = options;
  const baseUrl = clientOptions.baseUrl.replace(/\/+$/, '');
  const session = new CustomerSession(sessionOptions);
  const client = createClient<paths>({ ...clientOptions, baseUrl });
  // Refreshes go around the session middleware: a refused refresh is an answer, not a reason to refresh.
  client.use(sessionMiddleware(session, createClient<paths>({ ...clientOptions, baseUrl }), onSessionExpired));
  return Object.assign(client, { baseUrl, session });
}

/** Logs the customer in and keeps the session; a DeviceCloudProblem (401 INVALID_CREDENTIALS, …) otherwise. */
export async function signIn(client: DeviceCloudClient, email: string, password: string): Promise<void> {
  client.session.set(await unwrap(client.POST('/api/v1/auth/login', { body: { email, password } })));
}

/**
 * Ends the session here at once and at the service (its refresh and access tokens stop working).
 * A DeviceCloudProblem when the service could not be told.
 */
export async function signOut(client: DeviceCloudClient): Promise<void> {
  const refreshToken = client.session.tokens?.refreshToken;
  client.session.clear();
  if (refreshToken) await unwrap(client.POST('/api/v1/auth/logout', { body: { refreshToken } }));
}
