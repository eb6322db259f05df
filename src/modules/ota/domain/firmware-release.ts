import { createHash } from 'node:crypto';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

export interface FirmwareRelease {
  id: string;
  version: string;
  /** null: for every hardware. */
  hardwareId: string | null;
  channel: OtaChannel;
  /** An https URL elsewhere, or for an image the service keeps, its download path (hostedImagePath). */
  url: string;
  sha256: string;
  size: number;
  releaseNotes: string | null;
  rolloutPercent: number;
  minFromVersion: string | null;
  maxFailurePercent: number | null;
  /** Pause by itself when fewer than this share of the devices that confirmed it (at least 10) stayed crash-free for a day. */
  minCrashFreePercent: number | null;
  paused: boolean;
  /** When the release paused itself because too many devices failed it. */
  autoPausedAt: Date | null;
  revoked: boolean;
  /** Kept by the service and not uploaded whole yet: offered to nobody until it is. */
  awaitingImage: boolean;
  publishedAt: Date;
  updatedAt: Date;
  /** null: published unsigned (FIRMWARE_REQUIRE_SIGNATURE=false). */
  signed: SignedManifest | null;
  /** The campaign's devices: those with any of these tags, and those listed; both null: every device. */
  targetTags: string[] | null;
  targetDeviceIds: string[] | null;
  /** Offered from this instant on; null: at once. */
  startsAt: Date | null;
  /** Set when revoked with a way back: devices running this release are offered that (older) one. */
  rollbackTo: string | null;
}

/** A release's signature: by which key, over which manifest (firmware-manifest.ts), as published. */
export interface SignedManifest {
  keyId: string;
  /** The Ed25519 signature, 64 bytes, base64. */
  signature: string;
  manifest: string;
}

/** Where gateways download an image the service keeps (the url of such a release). */
export const hostedImagePath = (releaseId: string): string => `/api/v1/device/firmware/${releaseId}/image`;

/** Whether the service keeps the release's image (it was published without a URL). */
export const isHosted = (release: Pick<FirmwareRelease, 'id' | 'url'>): boolean => release.url === hostedImagePath(release.id);

/** What /ota/latest needs to know of the asking device. */
export interface OtaTarget {
  deviceId: string;
  hardwareId: string;
  firmwareVersion: FirmwareVersion;
  channel: OtaChannel;
  /** The battery conditions an update waits for (the device's configuration). */
  minSoc: number;
  temperatureRange: { min: number; max: number };
  /** The owner's tags, which campaigns target. */
  tags: readonly string[];
}

/**
 * Staged rollout: the device is in when a hash of (deviceId, release id) falls below the percent.
 * The hash does not depend on the percent, so raising it only ever adds devices.
 */
export function inRollout(deviceId: string, releaseId: string, rolloutPercent: number): boolean {
  if (rolloutPercent >= 100) return true;
  if (rolloutPercent <= 0) return false;
  const slot = createHash('sha256').update(`${releaseId}:${deviceId}`).digest().readUInt32BE(0) % 10_000;
  return slot < rolloutPercent * 100;
}

/** Beta gateways also take stable releases; stable gateways only stable ones. */
const channelAccepts = (deviceChannel: OtaChannel, releaseChannel: OtaChannel): boolean => releaseChannel === 'stable' || deviceChannel === 'beta';

/** Device ids of large campaigns as sets, built once per release as loaded (a poll checks membership). */
const targetSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** Whether the device is among the release's campaign devices (any of its tags, or listed); no campaign: every device. */
export function inTarget(release: Pick<FirmwareRelease, 'targetTags' | 'targetDeviceIds'>, target: Pick<OtaTarget, 'deviceId' | 'tags'>): boolean {
  if (release.targetTags === null && release.targetDeviceIds === null) return true;
  if (release.targetTags !== null && target.tags.some((tag) => release.targetTags!.includes(tag))) return true;
  if (release.targetDeviceIds === null) return false;
  let ids = targetSets.get(release.targetDeviceIds);
  if (!ids) targetSets.set(release.targetDeviceIds, (ids = new Set(release.targetDeviceIds)));
  return ids.has(target.deviceId);
}

/** Whether the release may be offered to the device at all: live, started, for its hardware and channel, within the campaign. */
function reaches(release: FirmwareRelease, target: OtaTarget, now: Date): boolean {
  if (release.revoked || release.paused || release.awaitingImage) return false;
  if (release.startsAt !== null && release.startsAt.getTime() > now.getTime()) return false;
  if (release.hardwareId !== null && release.hardwareId !== target.hardwareId) return false;
  return channelAccepts(target.channel, release.channel) && inTarget(release, target);
}

/**
 * The release to offer: the highest version that is live (not revoked, not paused, its image
 * there, its start passed), for the device's hardware (or any), on a channel it takes, within its
 * campaign (tags, ids), newer than what it runs (never a downgrade), whose minFromVersion it meets
 * and whose staged rollout includes it. On equal versions a release built for the device's hardware
 * wins over a generic one. With none, a device running a revoked release that names a way back
 * (rollbackTo) is offered that one: the only downgrade there is.
 */
export function selectRelease(releases: readonly FirmwareRelease[], target: OtaTarget, now: Date): FirmwareRelease | null {
  let best: { release: FirmwareRelease; version: FirmwareVersion } | null = null;
  for (const release of releases) {
    if (!reaches(release, target, now)) continue;
    const version = FirmwareVersion.parse(release.version);
    if (version.compareTo(target.firmwareVersion) <= 0) continue;
    if (release.minFromVersion !== null && target.firmwareVersion.compareTo(FirmwareVersion.parse(release.minFromVersion)) < 0) continue;
    if (!inRollout(target.deviceId, release.id, release.rolloutPercent)) continue;
    const order = best ? version.compareTo(best.version) : 1;
    if (order > 0 || (order === 0 && best && best.release.hardwareId === null && release.hardwareId !== null)) best = { release, version };
  }
  return best?.release ?? rollbackFor(releases, target, now);
}

/** The release a device on a revoked release goes back to, if that release names one that reaches it. */
function rollbackFor(releases: readonly FirmwareRelease[], target: OtaTarget, now: Date): FirmwareRelease | null {
  for (const revoked of releases) {
    if (!revoked.revoked || revoked.rollbackTo === null) continue;
    if (FirmwareVersion.parse(revoked.version).compareTo(target.firmwareVersion) !== 0) continue;
    if (revoked.hardwareId !== null && revoked.hardwareId !== target.hardwareId) continue;
    if (!inTarget(revoked, target)) continue;
    const back = releases.find((release) => release.id === revoked.rollbackTo);
    if (back && reaches(back, target, now)) return back;
  }
  return null;
}

/** Release progress of one device, from the OTA events it reported. */
export type ReleaseState = 'offered' | 'downloading' | 'installing' | 'installed' | 'failed' | 'rolled_back';

/**
 * Whether a release with maxFailurePercent should pause itself: among devices that finished it
 * (installed, failed or rolled back; at least 10), the share that failed exceeds the percent.
 */
export function exceedsFailureBudget(release: Pick<FirmwareRelease, 'maxFailurePercent'>, finished: { installed: number; failed: number; rolledBack: number }): boolean {
  if (release.maxFailurePercent === null) return false;
  const total = finished.installed + finished.failed + finished.rolledBack;
  if (total < 10) return false;
  return ((finished.failed + finished.rolledBack) * 100) / total > release.maxFailurePercent;
}

/** Devices that confirmed booting a release, and those of them that crashed on it within a day. */
export interface CrashFreeCounts {
  bootConfirmed: number;
  crashed: number;
}

/** The window after boot_confirmed in which a crash counts against the release. */
export const CRASH_FREE_WINDOW_MS = 24 * 3600 * 1000;

/** The share of confirming devices that did not crash within the window so far; null before any confirmed. */
export const crashFreePercent = ({ bootConfirmed, crashed }: CrashFreeCounts): number | null =>
  bootConfirmed === 0 ? null : Math.round(((bootConfirmed - crashed) * 1000) / bootConfirmed) / 10;

/**
 * Whether a release with minCrashFreePercent should pause itself: among devices that confirmed
 * booting it (at least 10, as for the failure budget), the crash-free share fell below the percent.
 * Devices still inside their day count as crash-free so far, so a crash pauses it at once.
 */
export function belowCrashFreeTarget(release: Pick<FirmwareRelease, 'minCrashFreePercent'>, counts: CrashFreeCounts): boolean {
  if (release.minCrashFreePercent === null || counts.bootConfirmed < 10) return false;
  return ((counts.bootConfirmed - counts.crashed) * 100) / counts.bootConfirmed < release.minCrashFreePercent;
}
