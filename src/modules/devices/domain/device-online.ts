/**
 * The one "online" rule, for the dashboard's list and detail and for device.offline: a device is
 * online while its telemetry keeps arriving, its last record within this many of its telemetry
 * intervals. Telemetry rather than any contact: the interval is the one cadence the service sets,
 * and a gateway that polls but sends no data is not doing what a battery monitor is for (its last
 * contact stays visible as lastSeenAt). SQL says the same through DEVICE_ONLINE (sql-api.ts).
 */
export const ONLINE_WITHIN_INTERVALS = 3;

export function isDeviceOnline(lastTelemetryAt: Date | null, intervalSec: number, now: Date): boolean {
  return lastTelemetryAt !== null && lastTelemetryAt.getTime() >= now.getTime() - ONLINE_WITHIN_INTERVALS * intervalSec * 1000;
}
