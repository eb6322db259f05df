import { Logger } from '@nestjs/common';

/**
 * Listeners on this instance for what a write stored, told after its commit. Listeners run
 * synchronously and must only hand the work on: the requests of the write are answered right
 * after. One that throws is logged and the others still hear.
 */
export class InProcessFeed<T> {
  private readonly logger: Logger;
  private readonly listeners = new Set<(stored: T) => void>();

  constructor(private readonly what: string) {
    this.logger = new Logger(`${what} feed`);
  }

  subscribe(listener: (stored: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  protected notify(stored: T): void {
    for (const listener of this.listeners) {
      try {
        listener(stored);
      } catch (error) {
        this.logger.error({ err: error }, `A ${this.what} listener failed`);
      }
    }
  }
}
