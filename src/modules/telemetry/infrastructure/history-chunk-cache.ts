import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import type { BucketColumns } from '../domain/telemetry-history.queries.js';

/**
 * What one kept run is taken to hold in memory with its key, its entry and its JSON text
 * (history-json.ts keeps that beside the run): measured at ~3 kB for an hour of 5-minute buckets
 * (12 points), of which the text is ~1.8 kB.
 */
export function runBytes(run: BucketColumns): number {
  return 512 + 210 * run.ts.length;
}

interface Entry {
  run: BucketColumns;
  count: number;
  bytes: number;
  /** Used since it was last kept or passed over: it goes to the back instead of out (second chance). */
  used: boolean;
}

/**
 * The buckets of whole slots of history answers (an hour of 5-minute buckets, 6 hours of hourly
 * ones, a day of 6-hour ones), by device, battery, metric, bucket width and slot, each with the
 * number of records it was built from. A run is used only while the rollup row of its slot still
 * counts as many records: records are only ever added (a duplicate is dropped, a late one adds to
 * every rollup level in its own transaction) and leave only by retention, which takes a slot's
 * rows with it, so an equal count means the same records and the same buckets. The check is the
 * answer's own statement (checkedSpans), so a run is never served without it; a late record makes
 * the next answer read that slot again. Per instance: nothing to invalidate across instances.
 * Within HISTORY_CACHE_MB, the oldest unused first out: a run used since it was kept or last passed
 * over goes to the back once instead (second chance, LRU's usual approximation; a hit changes a
 * flag, not the map's order).
 */
@Injectable()
export class HistoryChunkCache {
  private readonly entries = new Map<string, Entry>();
  private readonly maxBytes: number;
  private bytes = 0;

  constructor(env: Env) {
    this.maxBytes = env.HISTORY_CACHE_MB * 1024 * 1024;
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** The run kept under `key`, if it was built from `count` records; a run of another count is dropped. */
  get(key: string, count: number): BucketColumns | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.count !== count) {
      this.entries.delete(key);
      this.bytes -= entry.bytes;
      return undefined;
    }
    entry.used = true;
    return entry.run;
  }

  /** Keeps `run`, built from `count` records, under `key`, and marks it shared: nobody may change it from now on. */
  set(key: string, run: BucketColumns, count: number): void {
    const bytes = runBytes(run);
    if (bytes > this.maxBytes) return;
    run.shared = true;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.bytes;
    }
    this.entries.set(key, { run, count, bytes, used: false });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      // Entries put back are met again at the end of this walk, unused by then.
      this.entries.delete(oldest);
      if (entry.used) {
        entry.used = false;
        this.entries.set(oldest, entry);
      } else this.bytes -= entry.bytes;
    }
  }

  /** The bytes the kept runs are taken to hold (runBytes), at most HISTORY_CACHE_MB. */
  get size(): number {
    return this.bytes;
  }
}
