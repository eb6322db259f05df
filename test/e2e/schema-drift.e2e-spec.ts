import { Column, DataSource, Entity, PrimaryColumn } from 'typeorm';
import { ENTITIES, serviceDataSourceOptions } from '../../src/schema.js';
import { runMigrations } from '../../src/shared/database/migrate.js';
import { INITIAL_FLEET_DEFAULTS } from '../../src/modules/devices/domain/device-config.js';
import { RegistrationAllowlistRecord } from '../../src/modules/devices/infrastructure/device.record.js';
import { createTestDatabase } from '../support/postgres.js';

/**
 * The tables as PostgreSQL reports them, one line per column, constraint and index. TypeORM names a
 * primary key it was not given a name for PK_<hash>: shown as PostgreSQL's default <table>_pkey.
 * Views, like functions, are what only a migration can say (the views modules export to others).
 */
const CATALOG = `
  SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || coalesce('(' || character_maximum_length || ')', '')
         || CASE is_nullable WHEN 'YES' THEN ' NULL' ELSE ' NOT NULL' END || coalesce(' DEFAULT ' || column_default, '') || coalesce(' IDENTITY ' || identity_generation, '') AS line
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations'
     AND table_name NOT IN (SELECT table_name FROM information_schema.views WHERE table_schema = 'public')
  UNION ALL
  SELECT 'constraint ' || c.conrelid::regclass || ' ' || CASE WHEN c.conname ~ '^PK_[0-9a-f]+$' THEN c.conrelid::regclass || '_pkey' ELSE c.conname END || ' ' || pg_get_constraintdef(c.oid)
    FROM pg_constraint c WHERE c.connamespace = 'public'::regnamespace AND c.conrelid::regclass::text <> 'schema_migrations'
  UNION ALL
  SELECT 'index ' || regexp_replace(indexdef, '"PK_[0-9a-f]+"', tablename || '_pkey')
    FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`;

async function catalog(dataSource: DataSource): Promise<string[]> {
  const rows = await dataSource.query<{ line: string }[]>(CATALOG);
  return rows.map((row) => row.line).sort();
}

/** What `typeorm migration:generate --check` (npm run schema:check) computes: the statements that would make the database match the records. */
async function pendingChanges(dataSource: DataSource): Promise<string[]> {
  const log = await dataSource.driver.createSchemaBuilder().log();
  return log.upQueries.map((query) => query.query.replace(/\s+/g, ' '));
}

/** RegistrationAllowlistRecord with a longer hardware id: a record changed without a migration. */
@Entity({ name: 'registration_allowlist' })
class WiderAllowlistRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'registration_allowlist_pkey' })
  deviceId!: string;

  @Column({ name: 'hardware_id', type: 'varchar', length: 256 })
  hardwareId!: string;

  @Column({ name: 'imported_by', type: 'uuid' })
  importedBy!: string;

  @Column({ name: 'imported_at', type: 'timestamptz' })
  importedAt!: Date;
}

/**
 * One source of truth for the schema: the migrations build it, the records describe it, and
 * TypeORM's schema diff between the two is empty. CI runs this file on the embedded server and on
 * PostgreSQL 15. The planted mismatches show that the check sees each kind of drift. Likewise the
 * one row the migrations seed, the fleet defaults: a migration is frozen and cannot import the
 * constant the code ships with, so this file ties the two.
 */
describe('schema drift: the records describe exactly what the migrations build', () => {
  let database: { url: string; drop: () => Promise<void> };
  let dataSource: DataSource;

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    await runMigrations(database.url);
    dataSource = new DataSource(serviceDataSourceOptions({ url: database.url, poolSize: 2 }));
    await dataSource.initialize();
    // The service adds monthly partitions at start; they have no record and must not count as drift.
    await dataSource.query(`CREATE TABLE telemetry_y2026m01 PARTITION OF telemetry FOR VALUES FROM ('2026-01-01T00:00:00Z') TO ('2026-02-01T00:00:00Z')`);
    await dataSource.query(`CREATE TABLE device_logs_y2026m01d01 PARTITION OF device_logs FOR VALUES FROM ('2026-01-01T00:00:00Z') TO ('2026-01-02T00:00:00Z')`);
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await database?.drop();
  });

  it('TypeORM proposes no change to a freshly migrated database', async () => {
    expect(await pendingChanges(dataSource)).toEqual([]);
  });

  it('every table the migrations create has a record (TypeORM ignores tables without one)', async () => {
    const rows = await dataSource.query<{ name: string }[]>(
      `SELECT c.relname AS name FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'schema_migrations'`,
    );
    const recorded = dataSource.entityMetadatas.map((metadata) => metadata.tableName);
    expect(rows.map((row) => row.name).sort()).toEqual([...recorded].sort());
    expect(recorded).toHaveLength(ENTITIES.length);
  });

  it('the fleet defaults the migrations seed are the ones the code ships with (INITIAL_FLEET_DEFAULTS), revision 1', async () => {
    const rows = await dataSource.query<{ settings: unknown; revision: number }[]>('SELECT settings, revision FROM config_defaults');
    expect(rows).toEqual([{ settings: INITIAL_FLEET_DEFAULTS, revision: 1 }]);
  });

  describe.each([
    {
      drift: 'a column the database lacks',
      plant: 'ALTER TABLE devices DROP COLUMN firmware_reported_at',
      restore: 'ALTER TABLE devices ADD COLUMN firmware_reported_at timestamptz NULL',
      proposed: 'ALTER TABLE "devices" ADD "firmware_reported_at" TIMESTAMP WITH TIME ZONE',
    },
    {
      drift: 'a column with another default',
      plant: 'ALTER TABLE devices ALTER COLUMN config_revision SET DEFAULT 1',
      restore: 'ALTER TABLE devices ALTER COLUMN config_revision SET DEFAULT 0',
      proposed: `ALTER TABLE "devices" ALTER COLUMN "config_revision" SET DEFAULT '0'`,
    },
    {
      drift: 'a nullable column the record declares NOT NULL',
      plant: 'ALTER TABLE firmware_releases ALTER COLUMN sha256 DROP NOT NULL',
      restore: 'ALTER TABLE firmware_releases ALTER COLUMN sha256 SET NOT NULL',
      proposed: 'ALTER TABLE "firmware_releases" ALTER COLUMN "sha256" SET NOT NULL',
    },
    {
      drift: 'a missing index',
      plant: 'DROP INDEX devices_owner_idx',
      restore: 'CREATE INDEX devices_owner_idx ON devices (owner_id, device_id) WHERE owner_id IS NOT NULL',
      proposed: 'CREATE INDEX "devices_owner_idx" ON "devices" ("owner_id", "device_id") WHERE owner_id IS NOT NULL',
    },
    {
      drift: 'a missing check',
      plant: 'ALTER TABLE users DROP CONSTRAINT users_role_check',
      restore: `ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('customer', 'admin'))`,
      proposed: `ALTER TABLE "users" ADD CONSTRAINT "users_role_check" CHECK (role IN ('customer', 'admin'))`,
    },
    {
      drift: 'a foreign key with another ON DELETE',
      plant: 'ALTER TABLE ota_events DROP CONSTRAINT ota_events_device_id_fkey, ADD CONSTRAINT ota_events_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices (device_id)',
      restore: 'ALTER TABLE ota_events DROP CONSTRAINT ota_events_device_id_fkey, ADD CONSTRAINT ota_events_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices (device_id) ON DELETE CASCADE',
      proposed: 'ALTER TABLE "ota_events" ADD CONSTRAINT "ota_events_device_id_fkey" FOREIGN KEY ("device_id") REFERENCES "devices"("device_id") ON DELETE CASCADE ON UPDATE NO ACTION',
    },
  ])('names $drift', ({ plant, restore, proposed }) => {
    beforeAll(() => dataSource.query(plant));
    afterAll(() => dataSource.query(restore));

    it('in the statements it proposes', async () => {
      expect(await pendingChanges(dataSource)).toContain(proposed);
    });
  });

  it('names a record changed without a migration', async () => {
    const changed = new DataSource({
      ...serviceDataSourceOptions({ url: database.url, poolSize: 1 }),
      entities: ENTITIES.map((entity) => (entity === RegistrationAllowlistRecord ? WiderAllowlistRecord : entity)),
    });
    await changed.initialize();
    try {
      expect(await pendingChanges(changed)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^ALTER TABLE "registration_allowlist" (ADD|ALTER COLUMN) "hardware_id" (TYPE )?character varying\(256\)/)]),
      );
    } finally {
      await changed.destroy();
    }
  });

  describe('after every planted mismatch is undone', () => {
    it('proposes no change again', async () => {
      expect(await pendingChanges(dataSource)).toEqual([]);
    });
  });
});

/**
 * TypeORM's diff compares checks by name only, indexes without their WHERE, order or direction, and
 * no primary-key names. So the records also build a database of their own (synchronize, as a
 * generated migration would), and its catalog must equal the migrated one but for what TypeORM
 * cannot express, each named here.
 */
describe('schema drift: the records alone build what the migrations build', () => {
  let migrated: { url: string; drop: () => Promise<void> };
  let synchronized: { url: string; drop: () => Promise<void> };
  let fromMigrations: string[];
  let fromRecords: string[];

  beforeAll(async () => {
    [migrated, synchronized] = await Promise.all([createTestDatabase({ empty: true }), createTestDatabase({ empty: true })]);
    await runMigrations(migrated.url);
    const migratedSource = new DataSource(serviceDataSourceOptions({ url: migrated.url, poolSize: 1 }));
    const recordsSource = new DataSource(serviceDataSourceOptions({ url: synchronized.url, poolSize: 1 }));
    await Promise.all([migratedSource.initialize(), recordsSource.initialize()]);
    try {
      await recordsSource.synchronize();
      [fromMigrations, fromRecords] = await Promise.all([catalog(migratedSource), catalog(recordsSource)]);
    } finally {
      await Promise.all([migratedSource.destroy(), recordsSource.destroy()]);
    }
  });
  afterAll(async () => {
    await Promise.all([migrated?.drop(), synchronized?.drop()]);
  });

  it('builds every column, check, foreign key and index alike, except what only a migration can say', () => {
    expect(fromMigrations.length).toBeGreaterThan(100);
    expect(fromMigrations.filter((line) => !fromRecords.includes(line))).toEqual([
      // The migrations use PostgreSQL's gen_random_uuid(); TypeORM writes uuid_generate_v4() and reads both as "generated uuid".
      'column device_refresh_tokens.id uuid NOT NULL DEFAULT gen_random_uuid()',
      'column user_refresh_tokens.id uuid NOT NULL DEFAULT gen_random_uuid()',
      // TypeORM indexes have no column direction.
      'index CREATE INDEX ota_events_history_idx ON public.ota_events USING btree (device_id, ts DESC, id DESC)',
      // Partitioned by day: the parent's index is ON ONLY the parent.
      'index CREATE UNIQUE INDEX device_logs_pkey ON ONLY public.device_logs USING btree (device_id, ts, line_hash)',
      // An expression index (firmware_version_key(), COALESCE): synchronize: false on the record.
      "index CREATE UNIQUE INDEX firmware_releases_identity_key ON public.firmware_releases USING btree (firmware_version_key((version)::text), COALESCE(hardware_id, ''::character varying), channel)",
      // Partitioned by month: the parent's index is ON ONLY the parent.
      'index CREATE UNIQUE INDEX telemetry_pkey ON ONLY public.telemetry USING btree (device_id, ts, battery_id)',
    ]);
    expect(fromRecords.filter((line) => !fromMigrations.includes(line))).toEqual([
      'column device_refresh_tokens.id uuid NOT NULL DEFAULT uuid_generate_v4()',
      'column user_refresh_tokens.id uuid NOT NULL DEFAULT uuid_generate_v4()',
      'index CREATE INDEX ota_events_history_idx ON public.ota_events USING btree (device_id, ts, id)',
      'index CREATE UNIQUE INDEX device_logs_pkey ON public.device_logs USING btree (device_id, ts, line_hash)',
      'index CREATE UNIQUE INDEX telemetry_pkey ON public.telemetry USING btree (device_id, ts, battery_id)',
    ]);
  });
});
