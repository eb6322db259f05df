import { Injectable } from '@nestjs/common';
import { Env } from '../../config/env.js';
import { BoundedMap } from './bounded-map.js';

/** What /metrics reads of one cache. */
export interface CacheCensus {
  name: string;
  size: number;
  capacity: number;
  evictions: number;
}

/** A structure that keeps its own bound (the in-memory failure limiter's windows) and says how full it is. */
export interface CountedCache {
  census(): Omit<CacheCensus, 'name'>;
}

/**
 * The in-memory caches of this instance that grow with the fleet, each bounded: per device
 * (DEVICE_CACHE_MAX_ENTRIES each) or per customer account (ACCOUNT_CACHE_MAX_ENTRIES). Made here so
 * that each is counted in /metrics (dcs_cache_entries, dcs_cache_capacity, dcs_cache_evictions_total)
 * and an operator tunes them in one place.
 */
@Injectable()
export class MemoryCaches {
  private readonly caches = new Map<string, CountedCache>();

  constructor(private readonly env: Env) {}

  /** A cache with one entry per device (or per device and release). */
  perDevice<V>(name: string): BoundedMap<V> {
    return this.make<V>(name, this.env.DEVICE_CACHE_MAX_ENTRIES);
  }

  /** A cache with one entry per customer account. */
  perAccount<V>(name: string): BoundedMap<V> {
    return this.make<V>(name, this.env.ACCOUNT_CACHE_MAX_ENTRIES);
  }

  /** Counts, in /metrics, a structure bounded by its own rule. */
  track(name: string, cache: CountedCache): void {
    if (this.caches.has(name)) throw new Error(`cache ${name} is counted twice`);
    this.caches.set(name, cache);
  }

  census(): CacheCensus[] {
    return [...this.caches].map(([name, cache]) => ({ name, ...cache.census() }));
  }

  private make<V>(name: string, capacity: number): BoundedMap<V> {
    const cache = new BoundedMap<V>(capacity);
    this.track(name, { census: () => ({ size: cache.size, capacity: cache.capacity, evictions: cache.evictions }) });
    return cache;
  }
}
