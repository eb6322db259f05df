import type { FirmwareRelease } from '../../../src/modules/ota/domain/firmware-release.js';

/** When the releases aFirmwareRelease builds were published. */
export const PUBLISHED_AT = new Date('2026-11-21T12:00:00.000Z');
let releaseCounter = 0;

/** A live, unsigned, stable release for every hardware, with an id and url of its own: override what a test is about. */
export function aFirmwareRelease(overrides: Partial<FirmwareRelease> = {}): FirmwareRelease {
  releaseCounter++;
  const version = overrides.version ?? '0.2.0';
  return {
    id: `00000000-0000-4000-8000-${String(releaseCounter).padStart(12, '0')}`,
    version,
    hardwareId: null,
    channel: 'stable',
    url: `https://fw.example.com/${version}-${releaseCounter}.bin`,
    sha256: 'a'.repeat(64),
    size: 1000,
    releaseNotes: null,
    rolloutPercent: 100,
    minFromVersion: null,
    maxFailurePercent: null,
    minCrashFreePercent: null,
    paused: false,
    autoPausedAt: null,
    revoked: false,
    publishedAt: PUBLISHED_AT,
    updatedAt: PUBLISHED_AT,
    awaitingImage: false,
    signed: null,
    targetTags: null,
    targetDeviceIds: null,
    startsAt: null,
    rollbackTo: null,
    ...overrides,
  };
}
