import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';

/**
 * Gateways holding a long poll of their commands, woken when the change feed says the device's
 * commands changed — on this instance or any other (the trigger's NOTIFY reaches every instance).
 * A waiter costs a closure and a timer; a device holds at most MAX_WAITERS_PER_DEVICE at once, a
 * further one is answered at once, so a gateway that opens polls in a loop cannot grow memory.
 */
/** Why a wait ended: a change announced for the device, its time ran out, the client hung up, the instance is shutting down, or the device already holds as many waits as it may (answered at once). */
export type WaitEnd = 'changed' | 'timeout' | 'gone' | 'closing' | 'full';

@Injectable()
export class CommandWaiters implements OnModuleDestroy {
  static readonly MAX_WAITERS_PER_DEVICE = 2;
  private readonly waiting = new Map<string, Set<(end: WaitEnd) => void>>();
  private closing = false;

  constructor(feed: ChangeFeed) {
    feed.subscribe('device_command', (key) => (key === '*' || key === '' ? this.wakeAll() : this.wake(key)));
  }

  get size(): number {
    let count = 0;
    for (const set of this.waiting.values()) count += set.size;
    return count;
  }

  /**
   * Resolves when the device's commands change, after `ms`, when `gone` aborts (the client hung
   * up: its place is free at once) or when the instance shuts down, whichever comes first, with
   * which it was.
   */
  wait(deviceId: string, ms: number, gone?: AbortSignal): Promise<WaitEnd> {
    const set = this.waiting.get(deviceId) ?? new Set<(end: WaitEnd) => void>();
    if (this.closing) return Promise.resolve('closing');
    if (gone?.aborted) return Promise.resolve('gone');
    if (set.size >= CommandWaiters.MAX_WAITERS_PER_DEVICE) return Promise.resolve('full');
    return new Promise((resolve) => {
      const done = (end: WaitEnd) => {
        clearTimeout(timer);
        gone?.removeEventListener('abort', hungUp);
        set.delete(done);
        if (set.size === 0 && this.waiting.get(deviceId) === set) this.waiting.delete(deviceId);
        resolve(end);
      };
      const hungUp = () => done('gone');
      const timer = setTimeout(() => done('timeout'), ms);
      gone?.addEventListener('abort', hungUp, { once: true });
      set.add(done);
      this.waiting.set(deviceId, set);
    });
  }

  /** Shutdown: every held poll is answered now, so the server can close; the gateway polls again elsewhere. */
  onModuleDestroy(): void {
    this.closing = true;
    this.wakeAll();
  }

  private wake(deviceId: string): void {
    const end = this.closing ? 'closing' : 'changed';
    for (const done of [...(this.waiting.get(deviceId) ?? [])]) done(end);
  }

  private wakeAll(): void {
    for (const deviceId of [...this.waiting.keys()]) this.wake(deviceId);
  }
}
