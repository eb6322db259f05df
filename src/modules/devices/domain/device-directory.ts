import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** Who owns a device, for other modules. */
export abstract class DeviceDirectory {
  /** The device's owner (null: nobody), or undefined when there is no such device; read in `tx` when given. */
  abstract ownerOf(deviceId: string, tx?: SqlRunner): Promise<{ ownerId: string | null } | undefined>;
}
