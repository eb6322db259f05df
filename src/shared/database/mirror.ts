import type { ChangeFeed, ChangeTopic } from './change-feed.js';

/**
 * Rows kept in memory, by key, and forgotten when the change feed says they changed (see
 * ChangeFeed for why that is safe across instances). Bounded: past `maxEntries` the oldest entry
 * goes.
 */
export class Mirror<V> {
  private readonly entries = new Map<string, V>();

  constructor(
    private readonly feed: ChangeFeed,
    topic: ChangeTopic,
    private readonly load: (key: string) => Promise<V>,
    private readonly maxEntries = 100_000,
  ) {
    feed.subscribe(topic, (key) => (key === '*' || key === '' ? this.entries.clear() : this.entries.delete(key)));
  }

  async get(key = ''): Promise<V> {
    if (this.feed.live) {
      const cached = this.entries.get(key);
      if (cached !== undefined) return cached;
    }
    const epoch = this.feed.epoch;
    const value = await this.load(key);
    if (value !== undefined && value !== null && this.feed.live && this.feed.epoch === epoch) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, value);
    }
    return value;
  }

  forget(key = ''): void {
    this.entries.delete(key);
  }
}
