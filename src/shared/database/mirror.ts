import { BoundedMap } from '../memory/bounded-map.js';
import type { ChangeFeed, ChangeTopic } from './change-feed.js';

/**
 * Rows kept in memory, by key, and forgotten when the change feed says they changed (see
 * ChangeFeed for why that is safe across instances). Bounded: past the map's capacity the least
 * recently used entry goes (a per-device mirror takes its map from MemoryCaches).
 */
export class Mirror<V> {
  constructor(
    private readonly feed: ChangeFeed,
    topic: ChangeTopic,
    private readonly load: (key: string) => Promise<V>,
    private readonly entries: BoundedMap<V> = new BoundedMap<V>(16),
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
      this.entries.set(key, value);
    }
    return value;
  }

  forget(key = ''): void {
    this.entries.delete(key);
  }
}
