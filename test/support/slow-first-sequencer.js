import { basename } from 'node:path';
import Sequencer from '@jest/test-sequencer';

/**
 * The files that take longest, longest first, as measured on a 2-core machine. Jest orders a run
 * by the durations it cached from the last one; a fresh clone has none, and Jest's fallback (the
 * largest file first) once left a 45-second file to run alone at the end. Only the order depends
 * on this list: a stale one costs time, never a result.
 */
const SLOWEST = [
  'hostile-input.e2e-spec.ts',
  'service-lifecycle.e2e-spec.ts',
  'account-recovery.e2e-spec.ts',
  'telemetry-export.e2e-spec.ts',
  'service-process.e2e-spec.ts',
  'webhooks.e2e-spec.ts',
  // With chromium installed (CI installs it): Swagger UI renders the whole document, twice.
  'swagger-ui.e2e-spec.ts',
  'start-dev.e2e-spec.ts',
  'gateway-simulator.e2e-spec.ts',
  'mail-delivery.e2e-spec.ts',
  'alert-emails.e2e-spec.ts',
  'dashboard-stream-instances.e2e-spec.ts',
  'keep-alive.e2e-spec.ts',
];

export default class SlowFirstSequencer extends (Sequencer.default ?? Sequencer) {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.every((test) => test.duration != null)) return sorted;
    const rank = (test) => {
      const index = SLOWEST.indexOf(basename(test.path));
      return index < 0 ? SLOWEST.length : index;
    };
    // Array.prototype.sort is stable: the rest keep Jest's order.
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}
