import { Check, Column, Entity, PrimaryColumn } from 'typeorm';
import type { ConfigSettings } from '../domain/device-config.js';

/** The fleet-wide device settings: one row (id 1), seeded by the migration, which also adds the change-feed trigger. */
@Entity({ name: 'config_defaults' })
@Check('config_defaults_id_check', 'id = 1')
export class ConfigDefaultsRecord {
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'config_defaults_pkey' })
  id!: number;

  /** Every key present. */
  @Column({ type: 'jsonb' })
  settings!: ConfigSettings;

  @Column({ type: 'integer' })
  revision!: number;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
