import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADVISORY_LOCKS, DEVICE_LOCK_CLASSES } from '../../src/shared/database/advisory-locks.js';
import { ROOT, tsFiles } from './sql-ownership.js';

const SOURCES = join(ROOT, 'src');

describe('advisory lock keys', () => {
  it.each([
    ['one-key locks', ADVISORY_LOCKS],
    ['two-key device lock classes', DEVICE_LOCK_CLASSES],
  ])('%s: each use has its own key', (_, keys: Record<string, number>) => {
    const byKey = new Map<number, string[]>();
    for (const [use, key] of Object.entries(keys)) byKey.set(key, [...(byKey.get(key) ?? []), use]);
    expect([...byKey.values()].filter((uses) => uses.length > 1)).toEqual([]);
  });

  it('two-key classes fit the int4 first key', () => {
    for (const key of Object.values(DEVICE_LOCK_CLASSES)) expect(Number.isInteger(key) && key >= -(2 ** 31) && key < 2 ** 31).toBe(true);
  });

  it('no source file takes a lock by a number of its own: every key comes from advisory-locks.ts', () => {
    const own = join(SOURCES, 'shared', 'database', 'advisory-locks.ts');
    const numbered = /pg_(try_)?advisory_(xact_)?(un)?lock(_shared)?\(\s*\d|\b7_?221_?95\d/;
    expect(tsFiles(SOURCES).filter((file) => file !== own && numbered.test(readFileSync(file, 'utf8')))).toEqual([]);
  });
});
