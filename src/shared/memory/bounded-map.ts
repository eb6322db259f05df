/**
 * A map that holds at most `capacity` entries and forgets the least recently used one to make room
 * (a Map keeps insertion order: a read moves its entry to the end). What a cache of this instance
 * keeps per device or account, so memory stays bounded however large the fleet grows.
 */
export class BoundedMap<V> {
  private readonly entries = new Map<string, V>();
  /** Entries forgotten to make room, since start. */
  evictions = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`a bounded map needs a capacity of at least 1, not ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The entry, now the most recently used. */
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value as string);
      this.evictions += 1;
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
