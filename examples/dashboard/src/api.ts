import createClient from 'openapi-fetch';
import type { components, paths } from '../../../test/client/schema.js';

export type Device = components['schemas']['DashboardDeviceResponse'];
export type Alert = components['schemas']['AlertResponse'];
export type Point = components['schemas']['SeriesPointResponse'];
export type OtaEvent = components['schemas']['OtaHistoryItemResponse'];
export type DeviceEvent = components['schemas']['DeviceEventResponse'];
/** A record as the stream sends it: no id, records are not replayed after a break. */
export type TelemetryMessage = components['schemas']['StreamTelemetry'];
type Problem = components['schemas']['ProblemResponse'];

/** Unset: the page's own origin, where the Vite dev server proxies /api to the service. */
export const apiBase = (import.meta.env.VITE_API_URL || location.origin).replace(/\/$/, '');

interface Session {
  accessToken: string;
  refreshToken: string;
}

const SESSION_KEY = 'device-cloud.session';
// sessionStorage: a reload keeps the tab signed in; closing the tab ends it.
let session: Session | null = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as Session | null;
let refreshing: Promise<boolean> | undefined;
let onSignedOut = () => {};

function keep(next: Session | null): void {
  session = next;
  if (next) sessionStorage.setItem(SESSION_KEY, JSON.stringify(next));
  else sessionStorage.removeItem(SESSION_KEY);
}

/** For the calls that need no access token: login, refresh, logout. */
const anonymous = createClient<paths>({ baseUrl: apiBase });

/** Every other call: with the access token, and once more after a refresh when it answers 401. */
export const api = createClient<paths>({ baseUrl: apiBase, fetch: authorizedFetch });

export function failure(problem: Problem | undefined, response: Response): Error {
  return new Error(problem?.detail ?? problem?.title ?? `${response.status} ${response.statusText}`);
}

export function signedIn(): boolean {
  return session !== null;
}

export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

export async function signIn(email: string, password: string): Promise<void> {
  const { data, error, response } = await anonymous.POST('/api/v1/auth/login', { body: { email, password } });
  if (!data) throw failure(error, response);
  keep({ accessToken: data.accessToken, refreshToken: data.refreshToken });
}

export async function signOut(): Promise<void> {
  const refreshToken = session?.refreshToken;
  keep(null);
  onSignedOut();
  if (refreshToken) await anonymous.POST('/api/v1/auth/logout', { body: { refreshToken } });
}

async function authorizedFetch(request: Request): Promise<Response> {
  const retry = request.clone();
  const sentWith = session?.accessToken;
  const response = await fetch(withToken(request));
  if (response.status !== 401 || !session) return response;
  // Calls that failed together refresh once: a refresh token is single use.
  if (session.accessToken === sentWith) {
    refreshing ??= refreshTokens().finally(() => (refreshing = undefined));
    if (!(await refreshing)) return response;
  }
  return fetch(withToken(retry));
}

function withToken(request: Request): Request {
  if (session) request.headers.set('authorization', `Bearer ${session.accessToken}`);
  return request;
}

async function refreshTokens(): Promise<boolean> {
  const { data } = await anonymous.POST('/api/v1/auth/refresh', { body: { refreshToken: session!.refreshToken } });
  if (data) {
    keep({ accessToken: data.accessToken, refreshToken: data.refreshToken });
    return true;
  }
  keep(null);
  onSignedOut();
  return false;
}

export interface StreamHandlers {
  telemetry(message: TelemetryMessage): void;
  event(event: DeviceEvent): void;
  /** Open again after a break: telemetry sent meanwhile was not replayed. */
  resumed(): void;
  state(open: boolean): void;
}

/**
 * EventSource needs a listener per event name. Written as a record over the contract's type, so the
 * compiler refuses this list the day openapi.json gains a type it lacks.
 */
const EVENT_TYPES = Object.keys({
  'device.claimed': true,
  'device.released': true,
  'device.online': true,
  'device.offline': true,
  'alert.opened': true,
  'alert.resolved': true,
  'ota.succeeded': true,
  'ota.failed': true,
  'ota.release_paused': true,
  'config.applied': true,
} satisfies Record<DeviceEvent['type'], true>) as DeviceEvent['type'][];

async function streamTicket(): Promise<string> {
  const { data, error, response } = await api.POST('/api/v1/dashboard/stream/tickets');
  if (!data) throw failure(error, response);
  return data.ticket;
}

/**
 * The live stream of the signed-in customer's devices. A ticket opens it once, so after any error
 * this opens a new EventSource with a fresh ticket (backing off up to 30 s) and passes the id of
 * the last event seen, from which the service replays. Returns a function that closes it.
 */
export function openStream(on: StreamHandlers): () => void {
  let source: EventSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastEventId: string | undefined;
  let delayMs = 1000;
  let wasOpen = false;
  let closed = false;

  async function connect(): Promise<void> {
    try {
      const ticket = await streamTicket();
      if (closed) return;
      const query = new URLSearchParams({ ticket, ...(lastEventId ? { lastEventId } : {}) });
      source = new EventSource(`${apiBase}/api/v1/dashboard/stream?${query}`);
      source.onopen = () => {
        delayMs = 1000;
        on.state(true);
        if (wasOpen) on.resumed();
        wasOpen = true;
      };
      source.onerror = () => {
        source?.close();
        on.state(false);
        reconnect();
      };
      source.addEventListener('telemetry', (message) => on.telemetry(JSON.parse(message.data) as TelemetryMessage));
      for (const type of EVENT_TYPES) {
        source.addEventListener(type, (message) => {
          const event = JSON.parse(message.data) as DeviceEvent;
          lastEventId = event.id;
          on.event(event);
        });
      }
    } catch {
      reconnect();
    }
  }

  function reconnect(): void {
    if (closed) return;
    timer = setTimeout(connect, delayMs);
    delayMs = Math.min(delayMs * 2, 30_000);
  }

  void connect();
  return () => {
    closed = true;
    clearTimeout(timer);
    source?.close();
    on.state(false);
  };
}
