import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { Orm } from '../../../shared/database/orm.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { CONFIG_KEYS, type ConfigPatch, type ConfigSettings, type FleetDefaults } from '../domain/device-config.js';
import { FleetDefaultsStore } from '../application/fleet-defaults.js';
import { ConfigDefaultsRecord } from './config-defaults.record.js';

interface DefaultsRow {
  settings: ConfigSettings;
  revision: number;
  updated_at: Date;
}

const fromRecord = (record: ConfigDefaultsRecord): FleetDefaults => ({ settings: record.settings, revision: record.revision, updatedAt: record.updatedAt });
const fromRow = (row: DefaultsRow): FleetDefaults => ({ settings: row.settings, revision: row.revision, updatedAt: row.updated_at });

/**
 * One row (id 1), on TypeORM: every config poll reads it, but from memory (the Mirror), which
 * loads it again only when the change feed says it changed.
 */
@Injectable()
export class TypeOrmFleetDefaultsStore extends FleetDefaultsStore {
  private readonly mirror: Mirror<FleetDefaults>;

  constructor(
    private readonly orm: Orm,
    private readonly feed: ChangeFeed,
  ) {
    super();
    this.mirror = new Mirror(feed, 'config_defaults', async () => fromRecord(await this.orm.run((manager) => manager.findOneByOrFail(ConfigDefaultsRecord, { id: 1 }))));
  }

  current(): Promise<FleetDefaults> {
    return this.mirror.get();
  }

  async update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void, onChanged?: (tx: SqlRunner) => Promise<void>): Promise<FleetDefaults> {
    const updated = await this.orm.transaction(async (tx, sql) => {
      const record = await tx.findOneOrFail(ConfigDefaultsRecord, { where: { id: 1 }, lock: { mode: 'pessimistic_write' } });
      const current = fromRecord(record);
      precondition(current);
      const settings = { ...current.settings, ...patch } as ConfigSettings;
      // JSON text, not identity: a range is an object.
      if (CONFIG_KEYS.every((key) => JSON.stringify(settings[key]) === JSON.stringify(current.settings[key]))) return current;
      const result = await tx
        .createQueryBuilder()
        .update(ConfigDefaultsRecord)
        .set({ settings, revision: () => 'revision + 1', updatedAt: now })
        .where('id = 1')
        .returning(['settings', 'revision', 'updatedAt'])
        .updateEntity(false)
        .execute();
      await onChanged?.(sql);
      return fromRow((result.raw as DefaultsRow[])[0]);
    });
    this.feed.changed('config_defaults');
    return updated;
  }
}
