import {
  createDeviceCloudClient,
  DeviceCloudProblem,
  openDashboardStream,
  signIn as signInAt,
  signOut as signOutAt,
  type components,
  type SessionTokens,
  type StreamTelemetry,
} from '@device-cloud/client';

export type Device = components['schemas']['DashboardDeviceResponse'];
export type Alert = components['schemas']['AlertResponse'];
export type Point = components['schemas']['SeriesPointResponse'];
export type OtaEvent = components['schemas']['OtaHistoryItemResponse'];
export type DeviceEvent = components['schemas']['DeviceEventResponse'];
export type Battery = components['schemas']['BatteryResponse'];
export type BatteryProfile = components['schemas']['BatteryProfileRequest'];
export type EnergyPoint = components['schemas']['BatteryEnergyPointResponse'];
export type BatteryHealth = components['schemas']['BatteryHealthResponse'];
export type Command = components['schemas']['CommandResponse'];
export type LogLine = components['schemas']['LogLineResponse'];
export type Crash = components['schemas']['CrashResponse'];
export type Organization = components['schemas']['OrganizationResponse'];
export type OrganizationRole = Organization['role'];
export type Member = components['schemas']['MemberResponse'];
/** A record as the stream sends it: no id, records are not replayed after a break. */
export type TelemetryMessage = StreamTelemetry;
type Problem = components['schemas']['ProblemResponse'];

/** Unset: the page's own origin, where the Vite dev server proxies /api to the service. */
export const apiBase = (import.meta.env.VITE_API_URL || location.origin).replace(/\/$/, '');

const SESSION_KEY = 'device-cloud.session';
let onSignedOut = () => {};

/** Every call with the session's access token, and once more after a refresh when it is refused. */
export const api = createDeviceCloudClient({
  baseUrl: apiBase,
  session: {
    // sessionStorage: a reload keeps the tab signed in; closing the tab ends it.
    tokens: JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null') as SessionTokens | null,
    onChange: (tokens) => (tokens ? sessionStorage.setItem(SESSION_KEY, JSON.stringify(tokens)) : sessionStorage.removeItem(SESSION_KEY)),
  },
  onSessionExpired: () => onSignedOut(),
});

export function failure(problem: Problem | undefined, response: Response): Error {
  return DeviceCloudProblem.from({ error: problem, response });
}

/** What a problem says, for people: its detail, and for a validation problem what is wrong with each field. */
export function problemText(problem: unknown, response: Response): string {
  const { message, errors } = DeviceCloudProblem.from({ error: problem, response });
  return errors?.length ? `${message} ${errors.map((field) => field.message).join('; ')}.` : message;
}

export function signedIn(): boolean {
  return api.session.tokens !== null;
}

export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

export function signIn(email: string, password: string): Promise<void> {
  return signInAt(api, email, password);
}

export async function signOut(): Promise<void> {
  const loggedOut = signOutAt(api);
  onSignedOut();
  await loggedOut;
}

export interface StreamHandlers {
  telemetry(message: TelemetryMessage): void;
  event(event: DeviceEvent): void;
  /** Open again after a break: telemetry sent meanwhile was not replayed. */
  resumed(): void;
  state(open: boolean): void;
}

/**
 * The live stream of the signed-in customer's devices: a ticket per connection, and after a break a
 * fresh one, resuming from the last event seen (openDashboardStream). Returns a function that closes it.
 */
export function openStream(on: StreamHandlers): () => void {
  const stream = openDashboardStream(api, {
    onTelemetry: on.telemetry,
    onEvent: on.event,
    onOpen: (resumed) => {
      on.state(true);
      if (resumed) on.resumed();
    },
    onClose: () => on.state(false),
  });
  return () => {
    stream.close();
    on.state(false);
  };
}
