import type { FirmwareRelease } from './firmware-release.js';

/** Port for what the OTA poll reads and writes per request. The abstract class doubles as the injection token. */
export abstract class ReleaseOffers {
  /** Not revoked, not paused: from memory while no release changed. */
  abstract offerableReleases(): Promise<FirmwareRelease[]>;
  /** Remembers that the device was offered the release (first time only). */
  abstract recordOffer(deviceId: string, releaseId: string, now: Date): Promise<void>;
}
