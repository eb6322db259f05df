import type { HeldBackReason } from './battery-guard.js';
import type { FirmwareRelease } from './firmware-release.js';

/** Port for what the OTA poll reads and writes per request. The abstract class doubles as the injection token. */
export abstract class ReleaseOfferStore {
  /** Not revoked, not paused: from memory while no release changed. */
  abstract offerableReleases(): Promise<FirmwareRelease[]>;
  /** Remembers that the device was offered the release (the first offer's time), and that nothing holds it back any more. */
  abstract recordOffer(deviceId: string, releaseId: string, now: Date): Promise<void>;
  /** Remembers that the device's latest poll held the release back, and why. */
  abstract recordHeldBack(deviceId: string, releaseId: string, reason: HeldBackReason, now: Date): Promise<void>;
}
