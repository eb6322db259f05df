import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { DeviceDirectory } from '../domain/device-directory.js';

@Injectable()
export class SqlDeviceDirectory extends DeviceDirectory {
  constructor(private readonly sql: Sql) {
    super();
  }

  async ownerOf(deviceId: string, tx: SqlRunner = this.sql): Promise<{ ownerId: string | null } | undefined> {
    const [row] = await tx.rows<{ owner_id: string | null }>('SELECT owner_id FROM devices WHERE device_id = $1', [deviceId]);
    return row ? { ownerId: row.owner_id } : undefined;
  }
}
