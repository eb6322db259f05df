import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { RegistrationAllowlist, type AllowlistEntry } from '../domain/registration-allowlist.js';

@Injectable()
export class SqlRegistrationAllowlist extends RegistrationAllowlist {
  constructor(private readonly sql: Sql) {
    super();
  }

  async allows(entry: AllowlistEntry): Promise<boolean> {
    const rows = await this.sql.rows('SELECT 1 FROM registration_allowlist WHERE device_id = $1 AND hardware_id = $2', [entry.deviceId, entry.hardwareId]);
    return rows.length === 1;
  }

  async importEntries(entries: AllowlistEntry[], importedBy: string, now: Date): Promise<number> {
    // One statement for the whole batch; a repeated deviceId takes the last hardwareId given.
    const latest = new Map(entries.map((entry) => [entry.deviceId, entry.hardwareId]));
    const rows = await this.sql.rows(
      `INSERT INTO registration_allowlist (device_id, hardware_id, imported_by, imported_at)
       SELECT device_id, hardware_id, $3, $4 FROM unnest($1::text[], $2::text[]) AS entry (device_id, hardware_id)
       ON CONFLICT (device_id) DO UPDATE SET hardware_id = EXCLUDED.hardware_id, imported_by = EXCLUDED.imported_by, imported_at = EXCLUDED.imported_at
       RETURNING device_id`,
      [[...latest.keys()], [...latest.values()], importedBy, now],
    );
    return rows.length;
  }
}
