import type { Client, Middleware } from 'openapi-fetch';
import { DeviceCloudProblem } from './problem.js';
import type { paths } from './schema.js';

/** What a customer session keeps: the pair from login or refresh. */
export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
}

export interface CustomerSessionOptions {
  /** A session kept from before (a reload, say); none: signed out. */
  tokens?: SessionTokens | null;
  /** Called with every new pair (login, refresh) and with null when the session ends: store it here. */
  onChange?(tokens: SessionTokens | null): void;
}

/** The signed-in customer's tokens, as the client sends and refreshes them. */
export class CustomerSession {
  #tokens: SessionTokens | null;
  readonly #onChange: (tokens: SessionTokens | null) => void;

  constructor(options: CustomerSessionOptions = {}) {
    this.#tokens = options.tokens ? { accessToken: options.tokens.accessToken, refreshToken: options.tokens.refreshToken } : null;
    this.#onChange = options.onChange ?? (() => {});
  }

  get tokens(): SessionTokens | null {
    return this.#tokens;
  }

  /** Keeps a pair (login and refresh answer more: only these two are kept). */
  set(tokens: SessionTokens): void {
    this.#tokens = { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken };
    this.#onChange(this.#tokens);
  }

  clear(): void {
    this.#tokens = null;
    this.#onChange(null);
  }
}

/** RFC 6750 §3: the service says so when it refused the bearer token it was sent (expired, revoked, malformed). */
const INVALID_TOKEN = /\berror="invalid_token"/i;

/**
 * Sends the session's access token on every call that carries no Authorization of its own, and when
 * one is refused as an invalid token, refreshes the session once and sends the call again.
 *
 * Calls refused together share one refresh: a refresh token is single use. A call refused with a
 * token that was replaced meanwhile goes again with the new one. When the refresh is refused (400,
 * 401: the session ended, was revoked or timed out) the session is cleared, `onSessionExpired` is
 * called once, and every waiting call answers its own 401. When the refresh cannot be had for
 * another reason (the network, a 429, a 503) the session is kept and the calls answer their 401.
 */
export function sessionMiddleware(
  session: CustomerSession,
  refreshClient: Client<paths>,
  onSessionExpired: (problem: DeviceCloudProblem) => void = () => {},
): Middleware {
  /** Per call in flight: a copy to send again (a body can be read once), and the token it went with. */
  const sent = new Map<string, { replay: Request; accessToken: string }>();
  let refreshing: Promise<string | null> | undefined;

  async function refresh(tokens: SessionTokens): Promise<string | null> {
    let result;
    try {
      result = await refreshClient.POST('/api/v1/auth/refresh', { body: { refreshToken: tokens.refreshToken } });
    } catch {
      return null;
    }
    const current = session.tokens;
    // Signed out or in again meanwhile: that session is the one to use, if any.
    if (current?.refreshToken !== tokens.refreshToken) return current?.accessToken ?? null;
    if (result.data) {
      session.set(result.data);
      return result.data.accessToken;
    }
    if (result.response.status === 400 || result.response.status === 401) {
      session.clear();
      onSessionExpired(DeviceCloudProblem.from(result));
    }
    return null;
  }

  function renewedToken(refusedToken: string): Promise<string | null> {
    const tokens = session.tokens;
    if (!tokens) return Promise.resolve(null);
    if (tokens.accessToken !== refusedToken) return Promise.resolve(tokens.accessToken);
    refreshing ??= refresh(tokens).finally(() => (refreshing = undefined));
    return refreshing;
  }

  return {
    onRequest({ request, id }) {
      const tokens = session.tokens;
      if (!tokens || request.headers.has('authorization')) return undefined;
      request.headers.set('authorization', `Bearer ${tokens.accessToken}`);
      sent.set(id, { replay: request.clone(), accessToken: tokens.accessToken });
      return request;
    },
    async onResponse({ response, id, options }) {
      const call = sent.get(id);
      sent.delete(id);
      if (!call || response.status !== 401 || !INVALID_TOKEN.test(response.headers.get('www-authenticate') ?? '')) return undefined;
      const accessToken = await renewedToken(call.accessToken);
      if (!accessToken) return undefined;
      await response.body?.cancel();
      call.replay.headers.set('authorization', `Bearer ${accessToken}`);
      // Called on its own: a browser's fetch refuses any `this` but the window.
      const { fetch } = options;
      return fetch(call.replay);
    },
    onError({ id }) {
      sent.delete(id);
      return undefined;
    },
  };
}
