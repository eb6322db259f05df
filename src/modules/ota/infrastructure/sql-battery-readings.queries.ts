import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { BoundedMap } from '../../../shared/memory/bounded-map.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import { TELEMETRY_VIEWS, TelemetryFeed, type StoredTelemetry } from '../../telemetry/index.js';
import type { BatteryReadings } from '../domain/battery-guard.js';
import { BatteryReadingsQueries } from '../domain/battery-readings.queries.js';

/** How long a device's readings are remembered when no record of it is stored on this instance. */
export const BATTERY_READINGS_TTL_MS = 60_000;

interface Remembered {
  readings?: BatteryReadings;
  at: number;
  /** Bumped by each invalidation, so a read that began before it does not store what it found. */
  generation: number;
}

/**
 * The newest values the ingest statement keeps per battery (telemetry's latest view): one
 * primary-key range read, remembered a minute per device so that a poll the ETag answers costs
 * no query. Records this instance stores drop the device's entry at once; records stored by
 * another instance are seen within the minute.
 */
@Injectable()
export class SqlBatteryReadingsQueries extends BatteryReadingsQueries implements OnModuleDestroy {
  private readonly remembered: BoundedMap<Remembered>;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly sql: Sql,
    feed: TelemetryFeed,
    caches: MemoryCaches,
  ) {
    super();
    this.remembered = caches.perDevice('ota_battery_readings');
    this.unsubscribe = feed.subscribe((stored) => this.forget(stored));
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  async of(deviceId: string): Promise<BatteryReadings> {
    const now = Date.now();
    let entry = this.remembered.get(deviceId);
    if (entry?.readings && now - entry.at < BATTERY_READINGS_TTL_MS) return entry.readings;
    if (!entry) {
      entry = { at: 0, generation: 0 };
      this.remembered.set(deviceId, entry);
    }
    const generation = entry.generation;
    const readings = await this.read(deviceId);
    if (this.remembered.get(deviceId) === entry && entry.generation === generation) {
      entry.readings = readings;
      entry.at = now;
    }
    return readings;
  }

  private async read(deviceId: string): Promise<BatteryReadings> {
    const rows = await this.sql.rows<{ metric: string; value: number }>(
      `SELECT metric, value FROM ${TELEMETRY_VIEWS.latest} WHERE device_id = $1 AND metric IN ('soc', 'temperature')`,
      [deviceId],
      'ota_battery_readings',
    );
    return {
      socs: rows.filter((row) => row.metric === 'soc').map((row) => row.value),
      temperatures: rows.filter((row) => row.metric === 'temperature').map((row) => row.value),
    };
  }

  private forget(stored: StoredTelemetry[]): void {
    for (const { deviceId } of stored) {
      const entry = this.remembered.get(deviceId);
      if (!entry) continue;
      entry.readings = undefined;
      entry.generation += 1;
    }
  }
}
