/**
 * Where every refusal with 429 is counted, by the name of the limit that refused (the problem
 * filter reports them: every 429 passes through it). The abstract class is the injection token;
 * src/metrics implements it, and without metrics nothing is counted.
 */
export abstract class RateLimitMetrics {
  abstract refused(limiter: string): void;
}

export class UncountedRefusals extends RateLimitMetrics {
  refused(): void {}
}
