import { Env } from '../../../config/env.js';
import { ADMIT_EVERY_WHEN_FULL, HistoryChunkCache, recordsBytes, runBytes } from './history-chunk-cache.js';

const run = (points: number) => ({ ts: Array.from({ length: points }, (_, i) => i * 300), avg: new Array<number>(points).fill(1), min: new Array<number>(points).fill(1), max: new Array<number>(points).fill(1), count: new Array<number>(points).fill(1) });
const cacheOf = (mb: number) => new HistoryChunkCache(Object.assign(new Env(), { HISTORY_CACHE_MB: mb }));
const MB = 1024 * 1024;
/** The bytes of a run of 12 points, and how many of them a 1 MB cache keeps. */
const bytes = runBytes(run(12));
const fits = Math.floor(MB / bytes);

describe('HistoryChunkCache', () => {
  it('gives a run back only for the count it was built from, and forgets it at another', () => {
    const cache = cacheOf(1);
    const kept = run(12);
    cache.set('k', 0, 'g', kept, 12);

    expect(cache.get('k', 0, 12)).toBe(kept);
    expect(cache.get('k', 0, 13)).toBeUndefined();
    expect(cache.get('k', 0, 12)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps the records of an edge slot beside runs: each kind comes back only as itself, checked by its count, counted at its own bytes', () => {
    const cache = cacheOf(1);
    const records = { ts: [300.25, 301.5, 599.999999], values: [1.5, 2.5, 3.5] };
    const buckets = run(12);
    cache.set('s\u0000records', 300, 'g\u0000records', records, 3);
    cache.set('s', 3600, 'g', buckets, 12);

    expect(cache.getRecords('s\u0000records', 300, 3)).toBe(records);
    expect(cache.get('s\u0000records', 300, 3)).toBeUndefined();
    expect(cache.getRecords('s', 3600, 12)).toBeUndefined();
    expect(cache.get('s', 3600, 12)).toBe(buckets);
    expect(cache.size).toBe(recordsBytes(records) + bytes);
    expect(cache.holds('g')).toBe(true);

    expect(cache.getRecords('s\u0000records', 300, 4)).toBeUndefined();
    expect(cache.getRecords('s\u0000records', 300, 3)).toBeUndefined();
    expect(cache.size).toBe(bytes);
  });

  it('is roomy until a run kept has to put another out, and again once one fits without', () => {
    const cache = cacheOf(1);
    expect(cache.roomy).toBe(true);
    for (let i = 0; i < fits; i++) cache.set('k', i, 'g', run(12), 12);
    expect(cache.roomy).toBe(true);

    cache.set('k', fits, 'g', run(12), 12);
    expect(cache.roomy).toBe(false);

    cache.get('k', fits, 13);
    cache.set('k', fits + 1, 'g', run(12), 12);
    expect(cache.roomy).toBe(true);
    expect(cacheOf(0).roomy).toBe(false);
  });

  it('finds a run by its series and slot: the same slot of another series, or another slot, is not it', () => {
    const cache = cacheOf(1);
    const [first, second] = [run(12), run(12)];
    cache.set('s1', 3600, 'g', first, 12);
    cache.set('s2', 3600, 'g', second, 12);

    expect(cache.get('s1', 3600, 12)).toBe(first);
    expect(cache.get('s2', 3600, 12)).toBe(second);
    expect(cache.get('s1', 7200, 12)).toBeUndefined();
    expect(cache.get('s3', 3600, 12)).toBeUndefined();
    expect(cache.size).toBe(2 * bytes);
  });

  it('stays within its bytes, the oldest unused out first', () => {
    const cache = cacheOf(1);
    for (let i = 0; i < fits; i++) cache.set('k', i, 'g', run(12), 12);
    expect(cache.get('k', 0, 12)).toBeDefined();

    cache.set('k', 9999, 'g', run(12), 12);

    expect(cache.size).toBeLessThanOrEqual(MB);
    expect(cache.get('k', 0, 12)).toBeDefined();
    expect(cache.get('k', 1, 12)).toBeUndefined();
    expect(cache.get('k', 9999, 12)).toBeDefined();
  });

  it('gives a used run one more turn only: unused since it was passed over, it goes in its turn', () => {
    const cache = cacheOf(1);
    for (let i = 0; i < fits; i++) cache.set('a', i, 'g', run(12), 12);
    cache.get('a', 0, 12);

    cache.set('b', 0, 'g', run(12), 12);
    expect(cache.get('a', 1, 12)).toBeUndefined();
    for (let i = 1; i <= fits; i++) cache.set('b', i, 'g', run(12), 12);

    expect(cache.size).toBeLessThanOrEqual(MB);
    expect(cache.get('a', 0, 12)).toBeUndefined();
    expect(cache.get('b', fits, 12)).toBeDefined();
  });

  it('keeps its order past runs replaced or dropped: a key kept again goes to the back, once', () => {
    const cache = cacheOf(1);
    for (let count = 1; count <= 3000; count++) cache.set('x', 0, 'g', run(12), count);
    cache.set('y', 0, 'g', run(12), 1);
    expect(cache.get('x', 0, 2999)).toBeUndefined();
    cache.set('x', 0, 'g', run(12), 3001);
    for (let i = 0; i < fits - 2; i++) cache.set('a', i, 'g', run(12), 12);
    expect(cache.size).toBe(fits * bytes);

    cache.set('z', 0, 'g', run(12), 12);

    expect(cache.size).toBe(fits * bytes);
    expect(cache.get('y', 0, 1)).toBeUndefined();
    expect(cache.get('x', 0, 3001)).toBeDefined();
    expect(cache.get('a', 0, 12)).toBeDefined();
    expect(cache.get('z', 0, 12)).toBeDefined();
  });

  it('holds a group while any of its runs is kept, and not after the last one is put out or dropped', () => {
    const cache = cacheOf(1);
    cache.set('a', 1, 'a', run(12), 12);
    cache.set('a', 2, 'a', run(12), 12);
    cache.set('b', 1, 'b', run(12), 12);
    expect([cache.holds('a'), cache.holds('b'), cache.holds('c')]).toEqual([true, true, false]);

    expect(cache.get('a', 1, 13)).toBeUndefined();
    expect(cache.holds('a')).toBe(true);
    cache.set('a', 2, 'a', run(12), 14);
    expect(cache.holds('a')).toBe(true);
    expect(cache.get('a', 2, 12)).toBeUndefined();
    expect(cache.holds('a')).toBe(false);

    for (let i = 0; i < fits; i++) cache.set('c', i, 'c', run(12), 12);
    expect(cache.holds('b')).toBe(false);
    expect(cache.holds('c')).toBe(true);
  });

  it('admits every answer while it has room, and one in ADMIT_EVERY_WHEN_FULL once a set had to put runs out', () => {
    const cache = cacheOf(1);
    const admitted = (answers: number) => Array.from({ length: answers }, () => cache.admits()).filter(Boolean).length;
    for (let i = 0; i < fits; i++) cache.set('a', i, 'a', run(12), 12);
    expect(admitted(100)).toBe(100);

    cache.set('b', 0, 'b', run(12), 12);
    expect(admitted(20 * ADMIT_EVERY_WHEN_FULL)).toBe(20);

    // A run dropped for its count gives room back: the next set puts nothing out, and every answer is admitted again.
    expect(cache.get('b', 0, 13)).toBeUndefined();
    cache.set('c', 0, 'c', run(12), 12);
    expect(admitted(10)).toBe(10);
  });

  it('off at 0 MB', () => {
    const cache = cacheOf(0);
    cache.set('k', 0, 'g', run(1), 1);

    expect(cache.enabled).toBe(false);
    expect(cache.get('k', 0, 1)).toBeUndefined();
    expect(cache.holds('g')).toBe(false);
    expect(cache.admits()).toBe(false);
  });
});
