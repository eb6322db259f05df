import fc from 'fast-check';
import { coalesceProgress, OTA_EVENT_TYPES, PROGRESS_COALESCE_SEC, releaseStateAfter, runningVersionAfter, type OtaEvent, type OtaEventType } from './ota-event.js';

const T0 = Date.parse('2026-11-21T12:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);

function anEvent(overrides: Partial<OtaEvent> = {}): OtaEvent {
  return { ts: at(0), type: 'check', fromVersion: '0.1.9', toVersion: '0.1.10', progressPct: null, errorCode: null, message: null, ...overrides };
}

const progress = (seconds: number, toVersion = '0.1.10', progressPct = 10): OtaEvent => anEvent({ ts: at(seconds), type: 'download_progress', toVersion, progressPct });
const secondsOf = (events: OtaEvent[]) => events.map((event) => (event.ts.getTime() - T0) / 1000);

describe('releaseStateAfter', () => {
  it.each([
    ['check', null],
    ['download_started', 'downloading'],
    ['download_progress', 'downloading'],
    ['download_completed', 'downloading'],
    ['download_failed', 'failed'],
    ['verify_failed', 'failed'],
    ['install_started', 'installing'],
    ['install_succeeded', 'installed'],
    ['install_failed', 'failed'],
    ['rolled_back', 'rolled_back'],
    ['boot_confirmed', 'installed'],
  ] as Array<[OtaEventType, string | null]>)('%s with a toVersion → %s', (type, state) => {
    expect(releaseStateAfter(anEvent({ type }))).toBe(state);
  });

  it('covers every event type', () => {
    expect(OTA_EVENT_TYPES).toHaveLength(11);
  });

  it.each(OTA_EVENT_TYPES)('%s without a toVersion says nothing about a release', (type) => {
    expect(releaseStateAfter(anEvent({ type, toVersion: null }))).toBeNull();
  });
});

describe('runningVersionAfter', () => {
  it.each(['install_succeeded', 'boot_confirmed'] as OtaEventType[])('%s: the version installed (toVersion)', (type) => {
    expect(runningVersionAfter(anEvent({ type, fromVersion: '0.1.9', toVersion: '0.1.10' }))).toBe('0.1.10');
  });

  it('rolled_back: the version it went back to (fromVersion)', () => {
    expect(runningVersionAfter(anEvent({ type: 'rolled_back', fromVersion: '0.1.9', toVersion: '0.1.10' }))).toBe('0.1.9');
  });

  it.each(OTA_EVENT_TYPES.filter((type) => !['install_succeeded', 'boot_confirmed'].includes(type)))('%s: the version it updates from', (type) => {
    expect(runningVersionAfter(anEvent({ type, fromVersion: '0.1.9', toVersion: '0.1.10' }))).toBe('0.1.9');
  });

  it('null when the event names no such version', () => {
    expect(runningVersionAfter(anEvent({ type: 'check', fromVersion: null }))).toBeNull();
    expect(runningVersionAfter(anEvent({ type: 'install_succeeded', toVersion: null }))).toBeNull();
    expect(runningVersionAfter(anEvent({ type: 'rolled_back', fromVersion: null }))).toBeNull();
  });
});

describe('coalesceProgress', () => {
  const none = new Map<string, Date[]>();

  it('keeps every event that is not download_progress, however close', () => {
    const events = (['download_started', 'download_completed', 'install_started', 'install_succeeded'] as OtaEventType[]).map((type, i) => anEvent({ type, ts: at(i) }));

    expect(coalesceProgress(events, none)).toEqual({ kept: events, coalesced: 0 });
  });

  it('drops progress less than 30 s after a kept one of the same toVersion; 30 s later is kept', () => {
    const { kept, coalesced } = coalesceProgress([progress(0), progress(10), progress(29.999), progress(30), progress(59), progress(60)], none);

    expect(secondsOf(kept)).toEqual([0, 30, 60]);
    expect(coalesced).toBe(3);
  });

  it('measures from kept events only: 0, 20, 40 keeps 0 and 40', () => {
    const { kept, coalesced } = coalesceProgress([progress(0), progress(20), progress(40)], none);

    expect(secondsOf(kept)).toEqual([0, 40]);
    expect(coalesced).toBe(1);
  });

  it('each toVersion on its own', () => {
    const { kept, coalesced } = coalesceProgress([progress(0, '0.1.10'), progress(5, '0.2.0'), progress(10, '0.1.10'), progress(12, '0.2.0')], none);

    expect(kept.map((event) => [event.toVersion, (event.ts.getTime() - T0) / 1000])).toEqual([
      ['0.1.10', 0],
      ['0.2.0', 5],
    ]);
    expect(coalesced).toBe(2);
  });

  it('progress without toVersion is kept', () => {
    const events = [anEvent({ type: 'download_progress', toVersion: null, ts: at(0) }), anEvent({ type: 'download_progress', toVersion: null, ts: at(1) })];

    expect(coalesceProgress(events, none)).toEqual({ kept: events, coalesced: 0 });
  });

  it('against stored progress: within 30 s after a stored one is dropped, before it or at the same ts is kept (the duplicate check decides)', () => {
    const stored = new Map([['0.1.10', [at(100)]]]);

    const { kept, coalesced } = coalesceProgress([progress(60), progress(100), progress(110), progress(130)], stored);

    expect(secondsOf(kept)).toEqual([60, 100, 130]);
    expect(coalesced).toBe(1);
    expect(coalesceProgress([progress(80)], stored)).toEqual({ kept: [progress(80)], coalesced: 0 });
  });

  it('orders by ts first: the outcome does not depend on the order in the batch', () => {
    const forward = coalesceProgress([progress(0), progress(10), progress(45)], none);
    const backward = coalesceProgress([progress(45), progress(10), progress(0)], none);

    expect(secondsOf(backward.kept)).toEqual(secondsOf(forward.kept));
    expect(backward.coalesced).toBe(forward.coalesced);
  });

  describe('properties', () => {
    const anyEvent = fc.record({
      seconds: fc.integer({ min: 0, max: 300 }),
      progress: fc.boolean(),
      toVersion: fc.constantFrom('0.1.10', '0.2.0'),
    });
    const batch = fc.array(anyEvent, { minLength: 1, maxLength: 40 }).map((specs) =>
      specs.map((spec) => (spec.progress ? progress(spec.seconds, spec.toVersion) : anEvent({ type: 'download_started', ts: at(spec.seconds), toVersion: spec.toVersion }))),
    );
    const storedOf = (events: OtaEvent[]) => {
      const map = new Map<string, Date[]>();
      for (const event of events) if (event.type === 'download_progress' && event.toVersion) map.set(event.toVersion, [...(map.get(event.toVersion) ?? []), event.ts]);
      return map;
    };

    it('every event is either kept or counted as coalesced; kept progress of one toVersion is 30 s apart (or at the same ts)', () => {
      fc.assert(
        fc.property(batch, (events) => {
          const { kept, coalesced } = coalesceProgress(events, none);

          expect(kept.length + coalesced).toBe(events.length);
          expect(kept.filter((event) => event.type !== 'download_progress')).toHaveLength(events.filter((event) => event.type !== 'download_progress').length);
          for (const version of ['0.1.10', '0.2.0']) {
            const times = kept.filter((event) => event.type === 'download_progress' && event.toVersion === version).map((event) => event.ts.getTime());
            for (let i = 1; i < times.length; i++) {
              const gap = times[i] - times[i - 1];
              expect(gap === 0 || gap >= PROGRESS_COALESCE_SEC * 1000).toBe(true);
            }
          }
        }),
      );
    });

    it('a retried batch coalesces the same events again, once what it kept is stored', () => {
      fc.assert(
        fc.property(batch, (events) => {
          const first = coalesceProgress(events, none);
          const retry = coalesceProgress(events, storedOf(first.kept));

          expect(retry.coalesced).toBe(first.coalesced);
          expect(retry.kept).toEqual(first.kept);
        }),
      );
    });
  });
});
