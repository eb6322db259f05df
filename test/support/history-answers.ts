import { expect } from '@jest/globals';
import { ValidationFailedError } from '../../src/shared/domain-error.js';
import { pointsOf, type History } from '../../src/modules/telemetry/index.js';

/** The ValidationFailedError `work` rejects with, by the fields it names. */
export async function refusedFields(work: Promise<unknown>): Promise<string[]> {
  const error: unknown = await work.then(
    () => null,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ValidationFailedError);
  return ((error as ValidationFailedError).details.errors ?? []).map((problem) => problem.field);
}

export function buckets(history: History) {
  if (history.kind !== 'buckets') throw new Error(`expected buckets, got ${history.kind}`);
  return history;
}

/** A bucket answer with its series as point objects, as the API writes them. */
export function withPoints({ series, ...history }: Extract<History, { kind: 'buckets' }>) {
  return { ...history, series: series.map((one) => ({ metric: one.metric, batteryId: one.batteryId, points: pointsOf(one) })) };
}

export function raw(history: History) {
  if (history.kind !== 'raw') throw new Error(`expected raw records, got ${history.kind}`);
  return history;
}
