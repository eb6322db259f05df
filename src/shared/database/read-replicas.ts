import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { poolConfig, type DatabaseSettings } from './data-source-options.js';

export interface ReplicaSettings {
  urls: string[];
  /** A replica further behind than this is skipped until it catches up (REPLICA_MAX_LAG_MS). */
  maxLagMs: number;
  /** How often each replica's lag is measured (REPLICA_CHECK_INTERVAL_MS). */
  checkIntervalMs: number;
}

/** Why a replica is not read from now; null when it is. */
export type ReplicaSkip = 'not-checked' | 'lagging' | 'unreachable' | 'not-a-standby' | 'failed' | null;

/** One replica as /metrics and the logs show it: never its credentials. */
export interface ReplicaState {
  name: string;
  /** The last measured lag in ms (rounded up to the check interval); null while unknown. */
  lagMs: number | null;
  skipped: ReplicaSkip;
}

/** The primary's write position at one moment (pg_current_wal_lsn). */
interface Sample {
  at: number;
  lsn: bigint;
}

interface Replica {
  name: string;
  pool: pg.Pool;
  lagMs: number | null;
  /** When lagMs was measured (ms since the epoch); the lag grows by the time since. */
  measuredAt: number;
  skipped: ReplicaSkip;
}

/** "16/B374D848" → 0x16B374D848. */
export function parseLsn(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * How far behind a replica that has replayed up to `replayed` is, from the primary's write positions
 * sampled over time (oldest first): 0 when it has everything the newest sample had; otherwise the
 * time since the last sample it had fully replayed — the first change it lacks was written after
 * that one, so this errs long by at most one interval, never short. null (unknown) when it lacks
 * even the oldest sample's changes: then it is at least as old as the whole history kept.
 */
export function lagMs(samples: readonly Sample[], replayed: bigint, now: number): number | null {
  if (samples.length === 0) return null;
  if (replayed >= samples[samples.length - 1].lsn) return 0;
  for (let i = samples.length - 1; i >= 0; i -= 1) {
    if (samples[i].lsn <= replayed) return now - samples[i].at;
  }
  return null;
}

/** Host, port and database of a URL: how a replica is named in logs and metrics. */
function nameOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

/**
 * The streaming replicas of DATABASE_REPLICA_URLS, each with a pool of its own, and which of them
 * may serve reads now. Every REPLICA_CHECK_INTERVAL_MS the primary's write position is sampled and
 * each replica asked how far it has replayed: a replica is read from while it is a standby, answers,
 * and is no more than REPLICA_MAX_LAG_MS behind. The lag is measured against the primary's own
 * positions, not the replica's last replayed commit time, so an idle primary does not look like a
 * lagging replica and a replica whose stream stopped does not look current.
 *
 * Pools open their connections when first used: a replica that is down at start does not keep the
 * service from starting; it is skipped until a check reaches it.
 */
export class ReadReplicas implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ReadReplicas');
  private readonly replicas: Replica[];
  private samples: Sample[] = [];
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private next = 0;

  constructor(
    private readonly settings: ReplicaSettings,
    database: DatabaseSettings,
    /** The primary's pool, once it is open. */
    private readonly primary: () => pg.Pool | null,
  ) {
    this.replicas = settings.urls.map((url) => {
      const pool = new pg.Pool(poolConfig({ ...database, url }));
      // An idle replica connection that breaks is dropped by the pool; the next check notices.
      pool.on('error', () => undefined);
      return { name: nameOf(url), pool, lagMs: null, measuredAt: 0, skipped: 'not-checked' };
    });
  }

  get configured(): boolean {
    return this.replicas.length > 0;
  }

  onModuleInit(): void {
    if (!this.configured) return;
    this.timer = setInterval(() => void this.check(), this.settings.checkIntervalMs);
    this.timer.unref();
    void this.check();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.checking?.catch(() => undefined);
    await Promise.all(this.replicas.map((replica) => replica.pool.end().catch(() => undefined)));
  }

  /**
   * A replica's pool to read from, taking turns; null when none may serve (none configured, all
   * lagging, unreachable or not yet measured): the caller reads from the primary.
   */
  pick(): pg.Pool | null {
    if (this.replicas.length === 0) return null;
    const now = Date.now();
    for (let tried = 0; tried < this.replicas.length; tried += 1) {
      const replica = this.replicas[this.next];
      this.next = (this.next + 1) % this.replicas.length;
      // Without a fresh measurement the lag is at least the time since the last one.
      if (replica.skipped === null && replica.lagMs !== null && replica.lagMs + (now - replica.measuredAt) <= this.settings.maxLagMs) return replica.pool;
    }
    return null;
  }

  /** A read on `pool` failed because of the replica: skipped until a check finds it well again. */
  failed(pool: pg.Pool): void {
    const replica = this.replicas.find((candidate) => candidate.pool === pool);
    if (replica) this.skip(replica, 'failed', replica.lagMs);
  }

  states(): ReplicaState[] {
    return this.replicas.map(({ name, lagMs, skipped }) => ({ name, lagMs, skipped }));
  }

  /** One round of measurements; rounds never overlap. Resolves when done (tests wait on it). */
  check(): Promise<void> {
    this.checking ??= this.measure().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async measure(): Promise<void> {
    const primary = this.primary();
    if (primary) {
      try {
        const [row] = (await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows;
        this.remember({ at: Date.now(), lsn: parseLsn(row.lsn) });
      } catch {
        // The primary cannot say where it is (down, or itself in recovery): without samples no
        // replica's lag is known, and pick() lets each go once its last measurement is too old.
      }
    }
    await Promise.all(this.replicas.map((replica) => this.measureReplica(replica)));
  }

  /** Keeps the samples that can still tell a lag within REPLICA_MAX_LAG_MS, and the newest. */
  private remember(sample: Sample): void {
    const horizon = sample.at - this.settings.maxLagMs - 2 * this.settings.checkIntervalMs;
    this.samples = [...this.samples.filter((kept) => kept.at >= horizon), sample];
  }

  private async measureReplica(replica: Replica): Promise<void> {
    let row: { standby: boolean; replayed: string | null };
    try {
      [row] = (await replica.pool.query<{ standby: boolean; replayed: string | null }>('SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replayed')).rows;
    } catch {
      this.skip(replica, 'unreachable', null);
      return;
    }
    // A promoted replica (a failover, or an address that now reaches a primary) is on a timeline of
    // its own: how far it is behind cannot be told, so it is not read from.
    if (!row.standby || row.replayed === null) {
      this.skip(replica, 'not-a-standby', null);
      return;
    }
    if (this.samples.length === 0) return; // nothing to compare with yet: the state stays as it was
    const now = Date.now();
    const lag = lagMs(this.samples, parseLsn(row.replayed), now);
    replica.measuredAt = now;
    if (lag === null || lag > this.settings.maxLagMs) this.skip(replica, 'lagging', lag);
    else this.use(replica, lag);
  }

  private skip(replica: Replica, why: Exclude<ReplicaSkip, null>, lag: number | null): void {
    replica.lagMs = lag;
    if (replica.skipped === why) return;
    // Logged once per change of state, not per check.
    if (replica.skipped === null) this.logger.warn({ replica: replica.name, reason: why, lagMs: lag }, 'Read replica skipped: the primary serves its reads');
    replica.skipped = why;
  }

  private use(replica: Replica, lag: number): void {
    replica.lagMs = lag;
    if (replica.skipped === null) return;
    if (replica.skipped !== 'not-checked') this.logger.log({ replica: replica.name, lagMs: lag }, 'Read replica serving reads again');
    replica.skipped = null;
  }
}
