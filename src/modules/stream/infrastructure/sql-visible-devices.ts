import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { StreamViewer } from '../application/stream-hub.js';

/** Whether a stream may narrow to a device: the viewer's own, or any for an administrator. */
@Injectable()
export class SqlVisibleDevices {
  constructor(private readonly sql: Sql) {}

  async visible(viewer: StreamViewer, deviceId: string): Promise<boolean> {
    const rows = await this.sql.rows<{ found: number }>('SELECT 1 AS found FROM devices WHERE device_id = $1 AND ($2::boolean OR owner_id = $3::uuid)', [
      deviceId,
      viewer.isAdmin,
      viewer.userId,
    ]);
    return rows.length > 0;
  }
}
