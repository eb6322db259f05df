import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { BatteryReadingsSource, type BatteryReadings } from '../domain/battery-guard.js';

/** The newest values the ingest statement keeps per battery (device_latest_metrics): one primary-key range read. */
@Injectable()
export class SqlBatteryReadings extends BatteryReadingsSource {
  constructor(private readonly sql: Sql) {
    super();
  }

  async of(deviceId: string): Promise<BatteryReadings> {
    const rows = await this.sql.rows<{ metric: string; value: number }>(
      "SELECT metric, value FROM device_latest_metrics WHERE device_id = $1 AND metric IN ('soc', 'temperature')",
      [deviceId],
      'ota_battery_readings',
    );
    return {
      socs: rows.filter((row) => row.metric === 'soc').map((row) => row.value),
      temperatures: rows.filter((row) => row.metric === 'temperature').map((row) => row.value),
    };
  }
}
