import type { ReleaseState } from './firmware-release.js';

export const OTA_EVENT_TYPES = [
  'check',
  'download_started',
  'download_progress',
  'download_completed',
  'download_failed',
  'verify_failed',
  'install_started',
  'install_succeeded',
  'install_failed',
  'rolled_back',
  'boot_confirmed',
] as const;
export type OtaEventType = (typeof OTA_EVENT_TYPES)[number];

/** One runtime event of an update attempt from fromVersion to toVersion, as the gateway reported it. */
export interface OtaEvent {
  ts: Date;
  type: OtaEventType;
  fromVersion: string | null;
  toVersion: string | null;
  progressPct: number | null;
  errorCode: string | null;
  message: string | null;
}

const STATE_AFTER: Record<OtaEventType, ReleaseState | null> = {
  check: null,
  download_started: 'downloading',
  download_progress: 'downloading',
  download_completed: 'downloading',
  download_failed: 'failed',
  verify_failed: 'failed',
  install_started: 'installing',
  install_succeeded: 'installed',
  install_failed: 'failed',
  rolled_back: 'rolled_back',
  boot_confirmed: 'installed',
};

/** Where the device stands with the release of toVersion after this event (null: the event says nothing about it). */
export function releaseStateAfter(event: OtaEvent): ReleaseState | null {
  return event.toVersion === null ? null : STATE_AFTER[event.type];
}

/**
 * The firmware the device runs once it sent this event: the new version after a successful install
 * or confirmed boot, the old one after a rollback, and during any other step the one it updates from.
 */
export function runningVersionAfter(event: OtaEvent): string | null {
  if (event.type === 'install_succeeded' || event.type === 'boot_confirmed') return event.toVersion;
  return event.fromVersion;
}

/** Consecutive download_progress events of one download closer than this are kept as one. */
export const PROGRESS_COALESCE_SEC = 30;

/**
 * Drops download_progress events that follow a kept (or already stored) progress event of the same
 * toVersion by less than PROGRESS_COALESCE_SEC, so one download cannot flood the history. Events with
 * the same ts as a stored one are left for the duplicate check. Deterministic: a retried batch
 * coalesces the same events again.
 */
export function coalesceProgress(events: readonly OtaEvent[], storedProgress: ReadonlyMap<string, readonly Date[]>): { kept: OtaEvent[]; coalesced: number } {
  const kept: OtaEvent[] = [];
  const keptProgress = new Map<string, number[]>();
  let coalesced = 0;
  const ordered = [...events].sort((a, b) => a.ts.getTime() - b.ts.getTime());
  for (const event of ordered) {
    if (event.type !== 'download_progress' || event.toVersion === null) {
      kept.push(event);
      continue;
    }
    const at = event.ts.getTime();
    const earlier = [...(storedProgress.get(event.toVersion) ?? []).map((date) => date.getTime()), ...(keptProgress.get(event.toVersion) ?? [])];
    if (earlier.some((time) => time < at && at - time < PROGRESS_COALESCE_SEC * 1000)) {
      coalesced++;
      continue;
    }
    kept.push(event);
    keptProgress.set(event.toVersion, [...(keptProgress.get(event.toVersion) ?? []), at]);
  }
  return { kept, coalesced };
}
