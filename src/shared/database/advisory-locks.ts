/**
 * The service's advisory lock keys, in one place so that no two uses share one by accident (a
 * shared key made one job skip while the other ran, or two kinds of work queue on each other).
 * PostgreSQL keeps one-key (bigint) and two-key (int4, int4) locks apart, so each kind has its own
 * list; test/lint/advisory-locks.spec.ts checks that the keys of each are distinct. Other two-key
 * locks take hashtext of their own name as the first key (webhooks, api_keys, device_commands).
 *
 * A key, once released, stays: instances of two versions running side by side during an upgrade
 * must take the same lock for the same work.
 */
export const ADVISORY_LOCKS = {
  /** Migrations, across instances starting together. */
  migrations: 7_221_950_001,
  /** Telemetry partitions: one instance at a time adds and drops them. */
  telemetryPartitions: 7_221_950_002,
  /** Telemetry compaction: one instance at a time. */
  telemetryCompaction: 7_221_950_003,
  /** The offline check: one instance at a time decides who is offline. */
  offlineCheck: 7_221_950_004,
  /** Device log partitions. */
  deviceLogPartitions: 7_221_950_005,
  /** The OTA failure-budget check (shared 7_221_950_003 with compaction until 2026-12). */
  otaMaintenance: 7_221_950_006,
} as const;

/** First keys of two-key locks whose second key is hashtext(device id). */
export const DEVICE_LOCK_CLASSES = {
  /** A device's records: compaction of its days and ingest of its late records. */
  telemetry: 7_221_950,
  /** A device's alerts (shared 7_221_950 with telemetry until 2026-12). */
  alerts: 7_221_951,
} as const;
