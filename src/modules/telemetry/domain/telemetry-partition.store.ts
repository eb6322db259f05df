/** Storage by month: partitions made ahead of time, months past retention dropped with their rollup slots. */
export abstract class TelemetryPartitionStore {
  abstract maintain(now: Date, retentionDays: number): Promise<{ created: string[]; dropped: string[] }>;
}
