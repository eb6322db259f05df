import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import type { SlotRecords } from '../domain/history-series.js';
import type { BucketColumns } from '../domain/telemetry-history.queries.js';

/**
 * What one kept run is taken to hold in memory with its key, its entry and its JSON text
 * (history-json.ts keeps that beside the run): measured at ~3 kB for an hour of 5-minute buckets
 * (12 points), of which the text is ~1.8 kB.
 */
export function runBytes(run: BucketColumns): number {
  return 512 + 210 * run.ts.length;
}

/**
 * What an edge slot's records of one series are taken to hold in memory with their key, entry and
 * place in the queue: measured at 783, 1,232 and 1,926 bytes for 5, 30 and 60 records (24 slots
 * of each of 400 series kept, heap after two collections).
 */
export function recordsBytes(records: SlotRecords): number {
  return 700 + 21 * records.ts.length;
}

/** What the cache keeps: the buckets of a whole check slot, or the records of an edge slot. */
type Kept = BucketColumns | SlotRecords;
const bytesOf = (kept: Kept): number => ('avg' in kept ? runBytes(kept) : recordsBytes(kept));

/** When the cache is full, one in this many answers that found nothing of their device kept keeps its slots (admits). */
export const ADMIT_EVERY_WHEN_FULL = 4;

interface Entry {
  /** The series (device, battery, metric and bucket width) and the slot's first second. */
  series: string;
  slot: number;
  /** The device and bucket width it belongs to (holds). */
  group: string;
  /** null once the entry was dropped or replaced: its place in the queue is skipped. */
  run: Kept | null;
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
 * flag, not the map's order). Runs are found by series, then by slot, a number: the answer names a
 * series once and each of its slots by number, where one string key per slot cost ~1 µs a lookup
 * to build and hash (~150 µs of a 24-hour answer). The order is a queue of its own, not the
 * map's: a Map whose oldest keys are deleted again and again keeps their holes until it grows, and
 * every walk from its start steps over them (~8 µs a walk at 10,000 keys, once per kept slot when
 * the cache is full).
 * Beside the runs, the records of edge slots (the five-minute slots a range's unaligned ends cut:
 * SlotRecords, under a series of their own and a group per edge slot, so they do not count for
 * holds of the buckets), checked the same way by their slot's rollup row and read with getRecords.
 * Per group (device and bucket width), how many runs are kept: an answer whose group holds none
 * would miss every slot, so it is read whole in one statement and offers its slots (holds). Once
 * the cache is full, only one such answer in ADMIT_EVERY_WHEN_FULL keeps them (admits): when reads
 * spread over more devices than it holds, what it keeps mostly leaves unused, and keeping it cost
 * more than the hits saved (bench/README.md, "A thousand gateways").
 */
@Injectable()
export class HistoryChunkCache {
  /** By series, then slot; a series leaves with its last run. */
  private readonly entries = new Map<string, Map<number, Entry>>();
  /** The runs in `entries`, counted as they come and go: the queue is compacted against it. */
  private kept = 0;
  /** Every kept entry once, oldest first from `head`, among entries dropped since (run null). */
  private queue: Entry[] = [];
  private head = 0;
  private dropped = 0;
  private readonly groups = new Map<string, number>();
  private readonly maxBytes: number;
  private bytes = 0;
  /** The last set made room by putting runs out. */
  private full = false;
  private offers = 0;

  constructor(env: Env) {
    this.maxBytes = env.HISTORY_CACHE_MB * 1024 * 1024;
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** The run of `slot` kept in `series`, if it was built from `count` records; a run of another count is dropped. */
  get(series: string, slot: number, count: number): BucketColumns | undefined {
    const kept = this.lookup(series, slot, count);
    return kept && 'avg' in kept ? kept : undefined;
  }

  /** The records of `slot` kept in `series`, if they are `count`; records of another count are dropped. */
  getRecords(series: string, slot: number, count: number): SlotRecords | undefined {
    const kept = this.lookup(series, slot, count);
    return kept && 'values' in kept ? kept : undefined;
  }

  private lookup(series: string, slot: number, count: number): Kept | undefined {
    const entry = this.entries.get(series)?.get(slot);
    if (entry === undefined) return undefined;
    if (entry.count !== count) {
      this.drop(entry);
      return undefined;
    }
    entry.used = true;
    return entry.run ?? undefined;
  }

  /** Whether any run of `group` is kept. */
  holds(group: string): boolean {
    return this.groups.has(group);
  }

  /**
   * Whether the last run kept found room without putting another out. While it does, answers read
   * their edge slots whole to keep their records; once it does not, they read the range's part of
   * them as without the cache: with reads spread over more devices than the cache holds, kept
   * edge records mostly left unused (bench/README.md).
   */
  get roomy(): boolean {
    return this.enabled && !this.full;
  }

  /**
   * Whether an answer whose group holds nothing should keep its slots: always while the cache has
   * room, one answer in ADMIT_EVERY_WHEN_FULL once it is full.
   */
  admits(): boolean {
    if (!this.enabled) return false;
    if (!this.full) return true;
    this.offers = (this.offers + 1) % ADMIT_EVERY_WHEN_FULL;
    return this.offers === 0;
  }

  /** Keeps `run`, built from `count` records, as `slot` of `series` in `group`, and marks it shared: nobody may change it from now on. */
  set(series: string, slot: number, group: string, run: Kept, count: number): void {
    const bytes = bytesOf(run);
    if (bytes > this.maxBytes) return;
    run.shared = true;
    const old = this.entries.get(series)?.get(slot);
    if (old) this.drop(old);
    let slots = this.entries.get(series);
    if (slots === undefined) this.entries.set(series, (slots = new Map()));
    const entry: Entry = { series, slot, group, run, count, bytes, used: false };
    slots.set(slot, entry);
    this.kept += 1;
    this.groups.set(group, (this.groups.get(group) ?? 0) + 1);
    this.queue.push(entry);
    this.bytes += bytes;
    this.full = false;
    while (this.bytes > this.maxBytes) {
      this.full = true;
      const oldest = this.queue[this.head++];
      if (oldest.run === null) this.dropped -= 1;
      else if (oldest.used) {
        oldest.used = false;
        this.queue.push(oldest);
      } else this.remove(oldest);
    }
    // The queue's passed and dropped places, given back once they outnumber the kept entries.
    if (this.head + this.dropped > 1024 && this.head + this.dropped > this.kept) {
      this.queue = this.queue.slice(this.head).filter((kept) => kept.run !== null);
      this.head = 0;
      this.dropped = 0;
    }
  }

  /** Takes a run out whose place in the queue stays: skipped when reached. */
  private drop(entry: Entry): void {
    this.remove(entry);
    entry.run = null;
    this.dropped += 1;
  }

  private remove(entry: Entry): void {
    const slots = this.entries.get(entry.series);
    slots?.delete(entry.slot);
    if (slots?.size === 0) this.entries.delete(entry.series);
    this.kept -= 1;
    this.bytes -= entry.bytes;
    const left = (this.groups.get(entry.group) ?? 1) - 1;
    if (left > 0) this.groups.set(entry.group, left);
    else this.groups.delete(entry.group);
  }

  /** The bytes the kept runs are taken to hold (runBytes), at most HISTORY_CACHE_MB. */
  get size(): number {
    return this.bytes;
  }
}
