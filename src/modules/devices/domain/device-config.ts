/**
 * The configuration a gateway runs with. Fleet defaults until per-device overrides exist; the
 * register response and GET /device/config serve the same document.
 */
export interface DeviceConfig {
  version: number;
  telemetryIntervalSec: number;
  uploadBatchSize: number;
  otaCheckIntervalSec: number;
  otaChannel: 'stable' | 'beta';
  updatedAt: Date;
}

export const FLEET_DEFAULT_CONFIG: Omit<DeviceConfig, 'updatedAt'> = {
  version: 1,
  telemetryIntervalSec: 60,
  uploadBatchSize: 50,
  otaCheckIntervalSec: 3600,
  otaChannel: 'stable',
};
