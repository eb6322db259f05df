/**
 * The last answer of `load` for `ttlMs`, so that scrapes (several Prometheus servers, a curl loop)
 * cost the database at most one read per period. Concurrent callers share one load; a failed load
 * is not kept.
 */
export class ScrapeCache<T> {
  private value: { at: number; result: T } | null = null;
  private loading: Promise<T> | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly load: () => Promise<T>,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<T> {
    if (this.value && this.now() - this.value.at < this.ttlMs) return Promise.resolve(this.value.result);
    this.loading ??= this.load()
      .then((result) => {
        this.value = { at: this.now(), result };
        return result;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }
}
