/**
 * The statements the service runs on the benchmarked paths, copied from src so the baseline sends
 * PostgreSQL the very same text. bench/sql-parity.ts checks before every run that src still sends
 * exactly these (it captures them from the compiled service classes), so a change in src cannot
 * make the comparison silently unfair.
 */

/** src/modules/telemetry/infrastructure/ingest.sql.ts (prepared as telemetry_ingest by SqlTelemetryRecordStore); the baseline sends one request's records per statement. */
export const INGEST_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS r (device_id, battery_id, ts, metrics)
), inserted AS (
  INSERT INTO telemetry (device_id, battery_id, ts, metrics)
  SELECT device_id, battery_id, ts, metrics FROM input
  ON CONFLICT DO NOTHING
  RETURNING device_id, battery_id, ts, metrics
), energy_stale AS (
  SELECT battery_energy_mark_stale(array_agg(device_id), array_agg(battery_id), array_agg(ts)) AS marked
  FROM inserted WHERE metrics ?| ARRAY['current', 'chargedAhTotal', 'dischargedAhTotal']
  HAVING count(*) > 0
), metric_values AS (
  SELECT i.device_id, i.battery_id, m.key AS metric, i.ts, m.value::float8 AS value
  FROM inserted i CROSS JOIN LATERAL jsonb_each_text(i.metrics) AS m (key, value)
), slots AS (
  SELECT device_id, battery_id, metric, date_bin('5 minutes', ts, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS bucket,
         count(*) AS count, sum(value) AS sum, min(value) AS min, max(value) AS max
  FROM metric_values GROUP BY device_id, battery_id, metric, bucket
), rollup_5m AS (
  INSERT INTO telemetry_rollup_5m AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('5 minutes', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)
), rollup_1h AS (
  INSERT INTO telemetry_rollup_1h AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('1 hour', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)
), rollup_6h AS (
  INSERT INTO telemetry_rollup_6h AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('6 hours', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)
), rollup_1d AS (
  INSERT INTO telemetry_rollup_1d AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('1 day', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)
), latest AS (
  INSERT INTO device_latest_metrics AS l (device_id, battery_id, metric, ts, value)
  SELECT DISTINCT ON (device_id, battery_id, metric) device_id, battery_id, metric, ts, value
  FROM metric_values ORDER BY device_id, battery_id, metric, ts DESC
  ON CONFLICT (device_id, battery_id, metric) DO UPDATE SET ts = EXCLUDED.ts, value = EXCLUDED.value WHERE EXCLUDED.ts > l.ts
), previous AS (
  SELECT l.device_id, l.battery_id, max(l.ts) AS ts FROM device_latest_metrics l
  WHERE (l.device_id, l.battery_id) IN (SELECT DISTINCT device_id, battery_id FROM inserted)
  GROUP BY l.device_id, l.battery_id
), seen AS (
  SELECT device_id, owner_id, offline_since FROM devices_seen($1::text[], $5)
)
SELECT i.device_id, i.battery_id, i.ts, s.owner_id, p.ts AS previous_newest_ts, NULL::timestamptz AS offline_since
  FROM inserted i JOIN seen s ON s.device_id = i.device_id LEFT JOIN previous p ON p.device_id = i.device_id AND p.battery_id = i.battery_id
UNION ALL
SELECT device_id, NULL, NULL, owner_id, NULL, offline_since FROM seen WHERE offline_since IS NOT NULL
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL FROM energy_stale WHERE marked < 0`;

export const INGEST_NAME = 'telemetry_ingest';

/**
 * The baseline's own counterpart of what the service does when the ingest statement answers a
 * device still marked offline (the devices module clears the mark and records device.online):
 * rare, so no parity check.
 */
export const BACK_ONLINE_SQL = `
WITH back AS (
  UPDATE devices d SET offline_since = NULL
    FROM (SELECT device_id, offline_since FROM devices WHERE device_id = ANY($1::text[]) AND offline_since IS NOT NULL ORDER BY device_id FOR NO KEY UPDATE) AS marked
   WHERE d.device_id = marked.device_id
  RETURNING d.device_id, d.owner_id, marked.offline_since
)
INSERT INTO device_events (type, device_id, owner_id, occurred_at, data)
SELECT 'device.online', device_id, owner_id, $2, jsonb_build_object('offlineSince', to_char(offline_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM back`;

const DEVICE_COLUMNS =
  'device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at, credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at, re_registration_until, visible_since, config_overrides, config_revision, config_updated_at, applied_config_version, config_applied_at';

/**
 * The baseline's own statements for device logins (S5) and the guard's first use of new
 * credentials; the service sends its own, unprepared (SqlDeviceRepository.findById,
 * markCredentialsUsed), so no parity check.
 */
export const DEVICE_BY_ID_SQL = `SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1`;
export const DEVICE_BY_ID_NAME = 'device_by_id';
export const MARK_CREDENTIALS_USED_SQL = 'UPDATE devices SET credentials_used_at = $2 WHERE device_id = $1 AND credentials_used_at IS NULL';
export const MARK_CREDENTIALS_USED_NAME = 'device_mark_used';

const USER_COLUMNS = 'id, email, password_hash, role, email_verified_at, token_version, created_at, alert_emails';

/**
 * The baseline's own statements for logins (S5); the service sends its own, unprepared
 * (SqlUserRepository.findByEmail, SqlRefreshTokenStore.insert), so no parity check.
 */
export const USER_BY_EMAIL_SQL = `SELECT ${USER_COLUMNS} FROM users WHERE email = $1`;
/** src/modules/accounts/infrastructure/sql-session-users.ts: the customer guard's read, with the session (refresh-token family) check. */
export const USER_IN_SESSION_SQL = `SELECT ${USER_COLUMNS} FROM users
        WHERE id = $1 AND EXISTS (SELECT 1 FROM user_refresh_tokens t WHERE t.family_id = $2 AND t.user_id = users.id AND t.revoked_at IS NULL)`;
export const USER_IN_SESSION_NAME = 'user_in_session';

export const INSERT_DEVICE_REFRESH_TOKEN_SQL =
  'INSERT INTO device_refresh_tokens (device_id, token_version, family_id, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)';
export const INSERT_USER_REFRESH_TOKEN_SQL =
  'INSERT INTO user_refresh_tokens (user_id, token_version, family_id, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)';

/** src/modules/sharing/infrastructure/sql-device-grant.queries.ts: grantOf(), which the dashboard's visibility() asks (the one visibility rule, with sharing). */
export const DEVICE_VISIBILITY_SQL = 'SELECT v.role, v.owner_id, v.visible_since FROM visible_devices($2::boolean, $3::uuid) v WHERE v.device_id = $1';
export const DEVICE_VISIBILITY_NAME = 'device_access';

/** src/modules/telemetry/infrastructure/sql-telemetry-history.queries.ts: series(), generated there from the rollup levels. */
export const SERIES_SQL = `WITH parts (battery_id, metric, at, count, sum, min, max) AS (
         SELECT r.battery_id, r.metric, r.bucket AS at, r.count, r.sum, r.min, r.max
           FROM telemetry_rollup_1d r
          WHERE r.device_id = $1 AND r.bucket >= $10 AND r.bucket < $11
            AND ($12::text[] IS NULL OR r.metric = ANY($12)) AND ($13::text IS NULL OR r.battery_id = $13)
         UNION ALL
         SELECT r.battery_id, r.metric, r.bucket, r.count, r.sum, r.min, r.max
           FROM (VALUES ($8::timestamptz, $10::timestamptz), ($11::timestamptz, $9::timestamptz)) AS span (lo, hi)
           JOIN telemetry_rollup_6h r ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi
          WHERE ($12::text[] IS NULL OR r.metric = ANY($12)) AND ($13::text IS NULL OR r.battery_id = $13)
         UNION ALL
         SELECT r.battery_id, r.metric, r.bucket, r.count, r.sum, r.min, r.max
           FROM (VALUES ($6::timestamptz, $8::timestamptz), ($9::timestamptz, $7::timestamptz)) AS span (lo, hi)
           JOIN telemetry_rollup_1h r ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi
          WHERE ($12::text[] IS NULL OR r.metric = ANY($12)) AND ($13::text IS NULL OR r.battery_id = $13)
         UNION ALL
         SELECT r.battery_id, r.metric, r.bucket, r.count, r.sum, r.min, r.max
           FROM (VALUES ($4::timestamptz, $6::timestamptz), ($7::timestamptz, $5::timestamptz)) AS span (lo, hi)
           JOIN telemetry_rollup_5m r ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi
          WHERE ($12::text[] IS NULL OR r.metric = ANY($12)) AND ($13::text IS NULL OR r.battery_id = $13)
         UNION ALL
         SELECT d.battery_id, s.metric, s.bucket, s.count, s.sum, s.min, s.max
           FROM (VALUES ($4::timestamptz, $6::timestamptz), ($7::timestamptz, $5::timestamptz)) AS span (lo, hi)
           JOIN telemetry_days d ON d.device_id = $1 AND d.day > span.lo - interval '1 day' AND d.day < span.hi AND span.lo < span.hi
           CROSS JOIN LATERAL telemetry_day_slots(d.day, d.metrics, d.slot_count, d.slot_sum, d.slot_min, d.slot_max, span.lo, span.hi) AS s
          WHERE ($12::text[] IS NULL OR s.metric = ANY($12)) AND ($13::text IS NULL OR d.battery_id = $13)
         UNION ALL
         SELECT t.battery_id, m.key, t.ts, 1, v.value, v.value, v.value
           FROM telemetry t
           CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
           CROSS JOIN LATERAL (SELECT m.value::float8 AS value) AS v
          WHERE t.device_id = $1 AND t.ts >= $2 AND t.ts < $4
            AND ($12::text[] IS NULL OR m.key = ANY($12)) AND ($13::text IS NULL OR t.battery_id = $13)
         UNION ALL
         SELECT h.battery_id, v.metric, v.ts, 1, v.value, v.value, v.value
           FROM telemetry_hours h
           CROSS JOIN LATERAL telemetry_hour_values(h.hour, h.metrics, h.divisors, h.bases, h.records, h.slots, h.offsets, h.vals, $2, $4) AS v
          WHERE h.device_id = $1 AND h.hour > $2::timestamptz - interval '1 hour' AND h.hour < $4 AND $2 < $4
            AND ($12::text[] IS NULL OR v.metric = ANY($12)) AND ($13::text IS NULL OR h.battery_id = $13)
         UNION ALL
         SELECT t.battery_id, m.key, t.ts, 1, v.value, v.value, v.value
           FROM telemetry t
           CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
           CROSS JOIN LATERAL (SELECT m.value::float8 AS value) AS v
          WHERE t.device_id = $1 AND t.ts >= $5 AND t.ts < $3
            AND ($12::text[] IS NULL OR m.key = ANY($12)) AND ($13::text IS NULL OR t.battery_id = $13)
         UNION ALL
         SELECT h.battery_id, v.metric, v.ts, 1, v.value, v.value, v.value
           FROM telemetry_hours h
           CROSS JOIN LATERAL telemetry_hour_values(h.hour, h.metrics, h.divisors, h.bases, h.records, h.slots, h.offsets, h.vals, $5, $3) AS v
          WHERE h.device_id = $1 AND h.hour > $5::timestamptz - interval '1 hour' AND h.hour < $3 AND $5 < $3
            AND ($12::text[] IS NULL OR v.metric = ANY($12)) AND ($13::text IS NULL OR h.battery_id = $13)
       )
       SELECT battery_id, metric,
              string_agg(float8send(date_part('epoch', at)), '') AS at, string_agg(float8send(count), '') AS count,
              string_agg(float8send(sum), '') AS sum, string_agg(float8send(min), '') AS min, string_agg(float8send(max), '') AS max
         FROM parts
        GROUP BY battery_id, metric
        ORDER BY metric, battery_id`;
export const SERIES_NAME = 'dashboard_series';

/** The baseline's own read of the fleet defaults, mirrored in memory; the service loads its mirror on TypeORM (TypeOrmFleetDefaultsStore), so no parity check. */
export const CONFIG_DEFAULTS_SQL = 'SELECT settings, revision, updated_at FROM config_defaults WHERE id = 1';
export const CONFIG_DEFAULTS_NAME = 'config_defaults';
/** src/modules/ota/infrastructure/sql-release-offer.store.ts (the offerable releases mirrored in memory). */
export const OFFERABLE_RELEASES_SQL =
  'SELECT id, version, hardware_id, channel, url, sha256, size, release_notes, rollout_percent, min_from_version, max_failure_percent, min_crash_free_percent, paused, auto_paused_at, revoked, published_at, updated_at, signing_key_id, signature, manifest, target_tags, target_device_ids, starts_at, rollback_to FROM firmware_releases WHERE (NOT revoked AND NOT paused AND NOT awaiting_image) OR rollback_to IS NOT NULL';
export const OFFERABLE_RELEASES_NAME = 'releases_offerable';
export const RECORD_OFFER_SQL = `INSERT INTO device_release_states AS s (device_id, release_id, state, offered_at, last_event_at) VALUES ($1, $2, 'offered', $3, NULL)
       ON CONFLICT (release_id, device_id) DO UPDATE SET offered_at = COALESCE(s.offered_at, EXCLUDED.offered_at),
         state = CASE WHEN s.state = 'held_back' THEN 'offered' ELSE s.state END, held_back_reason = NULL, held_back_at = NULL`;
export const RECORD_OFFER_NAME = 'release_offer';

/** src/modules/batteries/infrastructure/sql-battery-energy.store.ts: hasStale(), which BatteryEnergy.buckets() asks before every energy read. */
export const ENERGY_HAS_STALE_SQL =
  'SELECT EXISTS (SELECT 1 FROM battery_energy_stale WHERE device_id = $1 AND battery_id = $2 AND bucket >= $3 AND bucket < $4) AS stale';
export const ENERGY_HAS_STALE_NAME = 'battery_energy_has_stale';

/** src/modules/batteries/infrastructure/sql-battery-energy.store.ts: sums(), the stored hours summed per bucket. */
export const ENERGY_SUMS_SQL = `SELECT date_bin(make_interval(secs => $5), bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS start, sum(charged_ah) AS charged_ah, sum(discharged_ah) AS discharged_ah,
              sum(charged_wh) AS charged_wh, sum(discharged_wh) AS discharged_wh, sum(covered_ms) AS covered_ms
         FROM battery_energy_1h WHERE device_id = $1 AND battery_id = $2 AND bucket >= $3 AND bucket < $4
        GROUP BY 1 ORDER BY 1`;
export const ENERGY_SUMS_NAME = 'battery_energy_sums';

/** src/modules/batteries/infrastructure/sql-battery-profiles.store.ts: get(). */
export const BATTERY_PROFILE_SQL = 'SELECT name, chemistry, nominal_voltage, capacity_ah, updated_at FROM battery_profiles WHERE device_id = $1 AND battery_id = $2';
export const BATTERY_PROFILE_NAME = 'battery_profile';

/** src/modules/commands/infrastructure/sql-command.store.ts: pending(), what a command poll's mirror loads per device (S8). */
export const COMMAND_PENDING_SQL = `SELECT command_id, device_id, type, params, state, created_at, expires_at, delivered_at, deliveries, accepted_at, finished_at, output FROM device_commands
        WHERE device_id = $1 AND state IN ('queued', 'delivered') AND expires_at > $2
        ORDER BY command_id`;
export const COMMAND_PENDING_NAME = 'command-pending';

/**
 * src/modules/device-logs/infrastructure/sql-device-log.store.ts: a flush's transaction (S10): the
 * (device, day) usage rows taken, the lines, the usage added. The service sends the batches of many
 * requests in one such transaction (group commit); the baseline sends each request's alone.
 */
export const LOG_USAGE_TAKE_SQL = `INSERT INTO device_log_usage (device_id, day, bytes)
         SELECT u.device_id, u.day, 0 FROM unnest($1::text[], $2::date[]) AS u(device_id, day) ORDER BY u.device_id, u.day
         ON CONFLICT (device_id, day) DO UPDATE SET bytes = device_log_usage.bytes
         RETURNING device_id, to_char(day, 'YYYY-MM-DD') AS day, bytes`;
export const LOG_USAGE_TAKE_NAME = 'log-usage-take';
export const LOG_INSERT_SQL = `WITH inserted AS (
           INSERT INTO device_logs (device_id, ts, line_hash, level, tag, message, received_at)
           SELECT l.device_id, l.ts, l.line_hash, l.level, l.tag, l.message, $7
             FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::text[]) AS l(device_id, ts, line_hash, level, tag, message)
           ON CONFLICT DO NOTHING
           RETURNING device_id, ts, line_hash)
         SELECT i.device_id, string_agg((extract(epoch FROM i.ts) * 1000)::bigint::text || ':' || i.line_hash::text, ',') AS keys,
                (SELECT o.owner_id FROM device_owners o WHERE o.device_id = i.device_id) AS owner_id
           FROM inserted i GROUP BY i.device_id`;
export const LOG_INSERT_NAME = 'log-insert';
export const LOG_USAGE_ADD_SQL = `UPDATE device_log_usage u SET bytes = u.bytes + a.bytes
           FROM unnest($1::text[], $2::date[], $3::bigint[]) AS a(device_id, day, bytes)
          WHERE u.device_id = a.device_id AND u.day = a.day`;
export const LOG_USAGE_ADD_NAME = 'log-usage-add';
