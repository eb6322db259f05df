import { ScrapeCache } from './scrape-cache.js';

/** A load whose answers the test releases one by one, counting the calls. */
function aLoad() {
  const pending: Array<{ resolve: (value: number) => void; reject: (error: Error) => void }> = [];
  const load = () => new Promise<number>((resolve, reject) => pending.push({ resolve, reject }));
  return { load, pending };
}

describe('ScrapeCache', () => {
  it('answers from the last load for ttl ms, then loads again', async () => {
    let now = 1_000;
    const { load, pending } = aLoad();
    const cache = new ScrapeCache(10_000, load, () => now);

    const first = cache.get();
    pending[0].resolve(3);
    expect(await first).toBe(3);
    now += 9_999;
    expect(await cache.get()).toBe(3);
    expect(pending).toHaveLength(1);

    now += 1;
    const second = cache.get();
    expect(pending).toHaveLength(2);
    pending[1].resolve(4);
    expect(await second).toBe(4);
  });

  it('shares one load between scrapes that arrive while it runs', async () => {
    const { load, pending } = aLoad();
    const cache = new ScrapeCache(10_000, load);

    const answers = Promise.all([cache.get(), cache.get(), cache.get()]);
    pending[0].resolve(7);

    expect(await answers).toEqual([7, 7, 7]);
    expect(pending).toHaveLength(1);
  });

  it('keeps no failure: the next scrape loads again', async () => {
    const { load, pending } = aLoad();
    const cache = new ScrapeCache(10_000, load);

    const failed = cache.get();
    pending[0].reject(new Error('database unavailable'));
    await expect(failed).rejects.toThrow('database unavailable');

    const retried = cache.get();
    expect(pending).toHaveLength(2);
    pending[1].resolve(1);
    expect(await retried).toBe(1);
  });
});
