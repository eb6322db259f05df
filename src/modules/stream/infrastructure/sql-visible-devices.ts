import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { sees } from '../../sharing/index.js';
import type { StreamViewer } from '../application/stream-subscriber.js';

/** Whether a stream may narrow to a device: one the viewer sees by the sharing module's rule (own, shared, or any for an administrator). */
@Injectable()
export class SqlVisibleDevices {
  constructor(private readonly sql: Sql) {}

  async visible(viewer: StreamViewer, deviceId: string): Promise<boolean> {
    const rows = await this.sql.rows<{ found: number }>(`SELECT 1 AS found FROM devices d WHERE d.device_id = $1 AND ${sees('d', '$2::boolean', '$3::uuid')}`, [
      deviceId,
      viewer.isAdmin,
      viewer.userId,
    ]);
    return rows.length > 0;
  }
}
