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

/**
 * The in-memory caches of this instance that grow with the fleet, each bounded: per device
 * (DEVICE_CACHE_MAX_ENTRIES each) or per customer account (ACCOUNT_CACHE_MAX_ENTRIES). Made here so
 * that each is counted in /metrics (dcs_cache_entries, dcs_cache_capacity, dcs_cache_evictions_total)
 * and an operator tunes them in one place.
 */
@Injectable()
export class MemoryCaches {
  private readonly caches = new Map<string, BoundedMap<unknown>>();

  constructor(private readonly env: Env) {}

  /** A cache with one entry per device (or per device and release). */
  perDevice<V>(name: string): BoundedMap<V> {
    return this.make<V>(name, this.env.DEVICE_CACHE_MAX_ENTRIES);
  }

  /** A cache with one entry per customer account. */
  perAccount<V>(name: string): BoundedMap<V> {
    return this.make<V>(name, this.env.ACCOUNT_CACHE_MAX_ENTRIES);
  }

  census(): CacheCensus[] {
    return [...this.caches].map(([name, cache]) => ({ name, size: cache.size, capacity: cache.capacity, evictions: cache.evictions }));
  }

  private make<V>(name: string, capacity: number): BoundedMap<V> {
    if (this.caches.has(name)) throw new Error(`cache ${name} is made twice`);
    const cache = new BoundedMap<V>(capacity);
    this.caches.set(name, cache as BoundedMap<unknown>);
    return cache;
  }
}
