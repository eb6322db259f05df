import { isDatabaseUnavailable } from './database-errors.js';

export interface GroupCommitOptions<T, R> {
  /** Size one flush may carry (records, lines): enough to amortise a commit, small enough to stay quick. */
  maxSizePerFlush: number;
  /**
   * Flushes running at once. One while load is light, so everything that arrives meanwhile merges
   * into the next; more only while a full flush's worth is waiting, so PostgreSQL works on them
   * with more than one backend instead of one.
   */
  maxConcurrentFlushes: number;
  sizeOf: (item: T) => number;
  /** Stores the items of one flush in one transaction; answers each item's result, in their order. */
  commit: (items: T[]) => Promise<R[]>;
}

interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: while a flush runs, the items (requests' batches) that arrive meanwhile wait and go
 * out together in the next one — one round trip and one commit for many requests, no added delay
 * when the service is idle. Each caller is answered after the commit that holds its item.
 *
 * When a flush fails for a reason other than unavailability, the fault lies in some item (the
 * checks before should have refused it): the flush is split in halves and each is tried again, down
 * to single items, so only the guilty one gets the error and every other one is stored. A flush with
 * k guilty items of n costs at most about 2k·log2(n) more commits. Unavailability fails every item
 * of the flush at once, none retried.
 */
export class GroupCommit<T, R> {
  private readonly queue: Pending<T, R>[] = [];
  private queuedSize = 0;
  private running = 0;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.queuedSize += this.options.sizeOf(item);
      this.startFlushes();
    });
  }

  private startFlushes(): void {
    const { maxConcurrentFlushes, maxSizePerFlush } = this.options;
    while (this.queue.length > 0 && (this.running === 0 || (this.running < maxConcurrentFlushes && this.queuedSize >= maxSizePerFlush))) {
      const batch = this.takeBatch();
      this.running += 1;
      void this.flush(batch).finally(() => {
        this.running -= 1;
        this.startFlushes();
      });
    }
  }

  private takeBatch(): Pending<T, R>[] {
    const batch: Pending<T, R>[] = [];
    let size = 0;
    while (this.queue.length > 0 && (batch.length === 0 || size + this.options.sizeOf(this.queue[0].item) <= this.options.maxSizePerFlush)) {
      const next = this.queue.shift()!;
      const itemSize = this.options.sizeOf(next.item);
      size += itemSize;
      this.queuedSize -= itemSize;
      batch.push(next);
    }
    return batch;
  }

  private async flush(batch: Pending<T, R>[]): Promise<void> {
    try {
      await this.commitIsolating(batch);
    } catch (error) {
      // The database cannot serve: every item of the flush still waiting fails now (a settled promise ignores the reject).
      for (const pending of batch) pending.reject(error);
    }
  }

  private async commitIsolating(batch: Pending<T, R>[]): Promise<void> {
    let results: R[];
    try {
      results = await this.options.commit(batch.map((pending) => pending.item));
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      if (batch.length === 1) {
        batch[0].reject(error);
        return;
      }
      const middle = Math.ceil(batch.length / 2);
      await this.commitIsolating(batch.slice(0, middle));
      await this.commitIsolating(batch.slice(middle));
      return;
    }
    batch.forEach((pending, index) => pending.resolve(results[index]));
  }
}
