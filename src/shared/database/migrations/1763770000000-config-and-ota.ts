import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device configuration (fleet defaults + per-device overrides), firmware releases, OTA runtime
 * events and each device's progress through a release.
 *
 * Caches: instances keep device snapshots, the fleet defaults and the release list in memory so
 * that a poll answered by its ETag costs no query. The triggers below announce every change that
 * such a cache mirrors on the `device_cloud_changes` channel (delivered at commit), whichever code
 * path made it; see shared/database/change-feed.ts.
 */
export class ConfigAndOta1763770000000 implements MigrationInterface {
  name = 'ConfigAndOta1763770000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Dotted numeric version → int[4] compared element-wise: 0.1.10 > 0.1.9, 1.2 = 1.2.0.
    await queryRunner.query(`
      CREATE FUNCTION firmware_version_key(version text) RETURNS int[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT (string_to_array(version, '.')::int[] || ARRAY[0, 0, 0, 0])[1:4]
      $$`);

    await queryRunner.query(`
      CREATE TABLE config_defaults (
        id smallint PRIMARY KEY CHECK (id = 1),
        settings jsonb NOT NULL,
        revision integer NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      INSERT INTO config_defaults (id, settings, revision, updated_at)
      VALUES (1, '{"telemetryIntervalSec":60,"uploadBatchSize":50,"otaCheckIntervalSec":3600,"otaChannel":"stable","logLevel":"warn"}', 1, now())`);

    await queryRunner.query(`
      ALTER TABLE devices
        ADD COLUMN config_overrides jsonb NOT NULL DEFAULT '{}',
        ADD COLUMN config_revision integer NOT NULL DEFAULT 0,
        ADD COLUMN config_updated_at timestamptz NULL,
        ADD COLUMN applied_config_version integer NULL,
        ADD COLUMN config_applied_at timestamptz NULL,
        ADD COLUMN firmware_reported_at timestamptz NULL`);

    await queryRunner.query(`
      CREATE TABLE firmware_releases (
        id uuid PRIMARY KEY,
        version varchar(64) NOT NULL,
        hardware_id varchar(128) NULL,
        channel varchar(16) NOT NULL CHECK (channel IN ('stable', 'beta')),
        url text NOT NULL,
        sha256 char(64) NOT NULL,
        size bigint NOT NULL,
        release_notes text NULL,
        rollout_percent smallint NOT NULL CHECK (rollout_percent BETWEEN 0 AND 100),
        min_from_version varchar(64) NULL,
        max_failure_percent smallint NULL CHECK (max_failure_percent BETWEEN 0 AND 100),
        paused boolean NOT NULL DEFAULT false,
        auto_paused_at timestamptz NULL,
        -- the failure budget counts devices whose last event came after this (set on a manual resume)
        failure_budget_since timestamptz NULL,
        revoked boolean NOT NULL DEFAULT false,
        published_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX firmware_releases_identity_key ON firmware_releases (firmware_version_key(version), COALESCE(hardware_id, ''), channel)`);

    await queryRunner.query(`
      CREATE TABLE ota_events (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        device_id varchar(64) NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
        ts timestamptz NOT NULL,
        type varchar(32) NOT NULL,
        from_version varchar(64) NULL,
        to_version varchar(64) NULL,
        progress_pct smallint NULL,
        error_code varchar(64) NULL,
        message varchar(500) NULL,
        received_at timestamptz NOT NULL
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX ota_events_identity_key ON ota_events (device_id, ts, type)');
    await queryRunner.query('CREATE INDEX ota_events_history_idx ON ota_events (device_id, ts DESC, id DESC)');

    // Where each device stands with each release it was offered or reported on.
    await queryRunner.query(`
      CREATE TABLE device_release_states (
        device_id varchar(64) NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
        release_id uuid NOT NULL REFERENCES firmware_releases (id) ON DELETE CASCADE,
        state varchar(16) NOT NULL CHECK (state IN ('offered', 'downloading', 'installing', 'installed', 'failed', 'rolled_back')),
        offered_at timestamptz NULL,
        -- the gateway's time of the event that set the state (later events win), and when it arrived
        last_event_ts timestamptz NULL,
        last_event_at timestamptz NULL,
        PRIMARY KEY (release_id, device_id)
      )`);
    await queryRunner.query('CREATE INDEX device_release_states_device_idx ON device_release_states (device_id)');

    await queryRunner.query(`
      CREATE FUNCTION announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'devices' THEN
          PERFORM pg_notify('device_cloud_changes', 'device:' || COALESCE(NEW.device_id, OLD.device_id));
        ELSE
          PERFORM pg_notify('device_cloud_changes', TG_TABLE_NAME || ':');
        END IF;
        RETURN NULL;
      END
      $$`);
    // Only the columns device snapshots hold: last_seen_at (every telemetry batch) stays quiet.
    await queryRunner.query(`
      CREATE TRIGGER devices_announce_change AFTER UPDATE ON devices FOR EACH ROW
      WHEN ((OLD.token_version, OLD.credentials_used_at IS NULL, OLD.hardware_id, OLD.firmware_version, OLD.config_overrides, OLD.config_revision, OLD.config_updated_at)
            IS DISTINCT FROM
            (NEW.token_version, NEW.credentials_used_at IS NULL, NEW.hardware_id, NEW.firmware_version, NEW.config_overrides, NEW.config_revision, NEW.config_updated_at))
      EXECUTE FUNCTION announce_change()`);
    await queryRunner.query('CREATE TRIGGER devices_announce_delete AFTER DELETE ON devices FOR EACH ROW EXECUTE FUNCTION announce_change()');
    await queryRunner.query('CREATE TRIGGER config_defaults_announce_change AFTER INSERT OR UPDATE OR DELETE ON config_defaults FOR EACH STATEMENT EXECUTE FUNCTION announce_change()');
    await queryRunner.query('CREATE TRIGGER firmware_releases_announce_change AFTER INSERT OR UPDATE OR DELETE ON firmware_releases FOR EACH STATEMENT EXECUTE FUNCTION announce_change()');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER firmware_releases_announce_change ON firmware_releases');
    await queryRunner.query('DROP TRIGGER config_defaults_announce_change ON config_defaults');
    await queryRunner.query('DROP TRIGGER devices_announce_delete ON devices');
    await queryRunner.query('DROP TRIGGER devices_announce_change ON devices');
    await queryRunner.query('DROP FUNCTION announce_change()');
    await queryRunner.query('DROP TABLE device_release_states');
    await queryRunner.query('DROP TABLE ota_events');
    await queryRunner.query('DROP TABLE firmware_releases');
    await queryRunner.query(`
      ALTER TABLE devices
        DROP COLUMN config_overrides, DROP COLUMN config_revision, DROP COLUMN config_updated_at,
        DROP COLUMN applied_config_version, DROP COLUMN config_applied_at, DROP COLUMN firmware_reported_at`);
    await queryRunner.query('DROP TABLE config_defaults');
    await queryRunner.query('DROP FUNCTION firmware_version_key(text)');
  }
}
