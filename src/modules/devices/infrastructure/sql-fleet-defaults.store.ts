import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { Sql } from '../../../shared/database/sql.js';
import { CONFIG_KEYS, type ConfigPatch, type ConfigSettings, type FleetDefaults } from '../domain/device-config.js';
import { FleetDefaultsStore } from '../application/fleet-defaults.js';

interface DefaultsRow {
  settings: ConfigSettings;
  revision: number;
  updated_at: Date;
}

const toDefaults = (row: DefaultsRow): FleetDefaults => ({ settings: row.settings, revision: row.revision, updatedAt: row.updated_at });

/** One row (id 1), mirrored in memory: every config poll reads it. */
@Injectable()
export class SqlFleetDefaultsStore extends FleetDefaultsStore {
  private readonly mirror: Mirror<FleetDefaults>;

  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
    this.mirror = new Mirror(feed, 'config_defaults', async () => {
      const rows = await this.sql.rows<DefaultsRow>('SELECT settings, revision, updated_at FROM config_defaults WHERE id = 1', [], 'config_defaults');
      return toDefaults(rows[0]);
    });
  }

  current(): Promise<FleetDefaults> {
    return this.mirror.get();
  }

  async update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void): Promise<FleetDefaults> {
    const updated = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<DefaultsRow>('SELECT settings, revision, updated_at FROM config_defaults WHERE id = 1 FOR UPDATE');
      const current = toDefaults(row);
      precondition(current);
      const settings = { ...current.settings, ...patch } as ConfigSettings;
      if (CONFIG_KEYS.every((key) => settings[key] === current.settings[key])) return current;
      const [next] = await tx.rows<DefaultsRow>(
        'UPDATE config_defaults SET settings = $1, revision = revision + 1, updated_at = $2 WHERE id = 1 RETURNING settings, revision, updated_at',
        [settings, now],
      );
      return toDefaults(next);
    });
    this.feed.changed('config_defaults');
    return updated;
  }
}
