export { createDeviceCloudClient, signIn, signOut, type DeviceCloudClient, type DeviceCloudClientOptions } from './client.js';
export { DeviceCloudProblem, unwrap, type DataOf, type FieldError, type ProblemCode, type ProblemDocument } from './problem.js';
export type { components, operations, paths } from './schema.js';
export { CustomerSession, sessionMiddleware, type CustomerSessionOptions, type SessionTokens } from './session.js';
export {
  openDashboardStream,
  type DashboardStream,
  type DashboardStreamOptions,
  type DeviceEvent,
  type EventSourceConstructor,
  type EventSourceLike,
  type StreamLogLine,
  type StreamTelemetry,
} from './stream.js';
