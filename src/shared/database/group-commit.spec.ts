import { GroupCommit } from './group-commit.js';

/** A commit the test finishes by hand: each call waits until `release` is called, and records what it got. */
function heldCommits(fail: (items: string[]) => unknown = () => null) {
  const calls: string[][] = [];
  const waiting: Array<() => void> = [];
  const commit = async (items: string[]): Promise<string[]> => {
    calls.push(items);
    await new Promise<void>((resolve) => waiting.push(resolve));
    const error = fail(items);
    if (error) throw error;
    return items.map((item) => `stored ${item}`);
  };
  const releaseAll = async (): Promise<void> => {
    while (waiting.length > 0) {
      waiting.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { calls, commit, releaseAll, waiting };
}

const settle = <T>(promise: Promise<T>) => promise.then((value) => ({ value }), (error: Error) => ({ error: error.message }));

describe('GroupCommit', () => {
  it('commits the first item at once, and everything that arrives meanwhile together in the next flush, each answered with its own result', async () => {
    const held = heldCommits();
    const group = new GroupCommit<string, string>({ maxSizePerFlush: 100, maxConcurrentFlushes: 3, sizeOf: () => 1, commit: held.commit });

    const answers = ['a', 'b', 'c', 'd'].map((item) => group.submit(item));
    expect(held.calls).toEqual([['a']]);
    await held.releaseAll();

    expect(await Promise.all(answers)).toEqual(['stored a', 'stored b', 'stored c', 'stored d']);
    expect(held.calls).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('takes at most maxSizePerFlush into a flush, and runs more flushes side by side only while a full one is waiting', async () => {
    const held = heldCommits();
    const group = new GroupCommit<string, string>({ maxSizePerFlush: 10, maxConcurrentFlushes: 2, sizeOf: (item) => Number(item.split(':')[1]), commit: held.commit });

    const answers = ['a:4', 'b:4', 'c:4', 'd:4', 'e:4', 'f:4', 'g:4'].map((item) => group.submit(item));
    // a alone; then 24 waiting ≥ 10: a second flush of b, c (8; d would make 12); then 12 waiting, but two run.
    expect(held.calls).toEqual([['a:4'], ['b:4', 'c:4']]);
    await held.releaseAll();

    expect(await Promise.all(answers)).toHaveLength(7);
    expect(held.calls.flat()).toEqual(['a:4', 'b:4', 'c:4', 'd:4', 'e:4', 'f:4', 'g:4']);
    expect(held.calls.every((call) => call.length * 4 <= 10)).toBe(true);
  });

  it('fails only the guilty item of a flush: the flush is split until it stands alone, the others are stored', async () => {
    const held = heldCommits((items) => (items.includes('bad') ? new Error('violates a check constraint') : null));
    const group = new GroupCommit<string, string>({ maxSizePerFlush: 100, maxConcurrentFlushes: 1, sizeOf: () => 1, commit: held.commit });

    const first = group.submit('first');
    const answers = ['a', 'b', 'bad', 'c', 'd'].map((item) => settle(group.submit(item)));
    await held.releaseAll();

    expect(await first).toBe('stored first');
    expect(await Promise.all(answers)).toEqual([{ value: 'stored a' }, { value: 'stored b' }, { error: 'violates a check constraint' }, { value: 'stored c' }, { value: 'stored d' }]);
  });

  it('fails every item of a flush at once, without splitting, when the database is unavailable', async () => {
    const unavailable = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    const held = heldCommits((items) => (items.length > 1 ? unavailable : null));
    const group = new GroupCommit<string, string>({ maxSizePerFlush: 100, maxConcurrentFlushes: 1, sizeOf: () => 1, commit: held.commit });

    const first = group.submit('first');
    const answers = ['a', 'b', 'c'].map((item) => settle(group.submit(item)));
    await held.releaseAll();

    expect(await first).toBe('stored first');
    expect(await Promise.all(answers)).toEqual([{ error: 'connection refused' }, { error: 'connection refused' }, { error: 'connection refused' }]);
    expect(held.calls).toEqual([['first'], ['a', 'b', 'c']]);
  });
});
