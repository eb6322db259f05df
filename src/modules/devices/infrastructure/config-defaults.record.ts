import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/** The fleet-wide device settings: one row (id 1), seeded by the migration, which also adds the change-feed trigger. */
@Entity({ name: 'config_defaults' })
@Check('config_defaults_id_check', 'id = 1')
export class ConfigDefaultsRecord {
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'config_defaults_pkey' })
  id!: number;

  /** ConfigSettings, every key present. */
  @Column({ type: 'jsonb' })
  settings!: Record<string, unknown>;

  @Column({ type: 'integer' })
  revision!: number;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
