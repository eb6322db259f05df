import type { OtaTarget } from './firmware-release.js';

/**
 * Port for what OTA needs to know of the asking gateway: hardware, running firmware and channel
 * (the devices module owns them). The abstract class doubles as the injection token.
 */
export abstract class OtaDevices {
  /** Null when the device no longer exists. */
  abstract target(deviceId: string): Promise<OtaTarget | null>;
  /** The device's firmware changed outside the devices module (an OTA event batch): cached reads of it must go. */
  abstract firmwareChanged(deviceId: string): void;
}
