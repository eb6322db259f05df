import fc from 'fast-check';
import { ByteBudget } from './byte-budget.js';

describe('ByteBudget', () => {
  it('lets an idle budget send its burst at once, then spaces the pieces at the rate', () => {
    const budget = new ByteBudget(1000, 100); // 1,000 bytes/s: 100 bytes per 100 ms
    expect(budget.delayFor(50, 10_000)).toBe(0);
    expect(budget.delayFor(50, 10_000)).toBe(0);
    expect(budget.delayFor(50, 10_000)).toBe(0); // 100 ms of burst, and this one starts right at its end
    expect(budget.delayFor(50, 10_000)).toBe(50);
    expect(budget.delayFor(100, 10_000)).toBe(100);
    expect(budget.delayFor(10, 10_150)).toBe(50);
  });

  it('refills while idle, never beyond the burst', () => {
    const budget = new ByteBudget(1000, 100);
    budget.delayFor(1000, 0); // a second's worth at once: paid until 900
    expect(budget.delayFor(1, 500)).toBe(400);
    expect(budget.delayFor(100, 60_000)).toBe(0); // a minute idle: 100 ms of burst, not 59 s
    expect(budget.delayFor(1, 60_000)).toBe(0);
    expect(budget.delayFor(1, 60_000)).toBe(1);
  });

  it('is no limit at a rate of 0', () => {
    const budget = new ByteBudget(0);
    for (let i = 0; i < 100; i += 1) expect(budget.delayFor(1 << 20, 0)).toBe(0);
  });

  it('never lets the streams together send faster than the rate plus one burst, whatever they ask and whenever', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.array(fc.record({ bytes: fc.integer({ min: 1, max: 1 << 20 }), after: fc.integer({ min: 0, max: 50 }) }), { minLength: 1, maxLength: 200 }),
        (rate, asks) => {
          const budget = new ByteBudget(rate, 100);
          let now = 0;
          const sends: { at: number; bytes: number }[] = [];
          for (const ask of asks) {
            now += ask.after;
            sends.push({ at: now + budget.delayFor(ask.bytes, now), bytes: ask.bytes });
          }
          // Over any span from the first send, what went out before its end is at most the rate's
          // worth of that span plus the burst plus the last piece granted.
          const first = sends[0]!.at;
          for (const { at } of sends) {
            const sent = sends.filter((send) => send.at < at).reduce((sum, send) => sum + send.bytes, 0);
            const largest = Math.max(...sends.map((send) => send.bytes));
            expect(sent).toBeLessThanOrEqual(((at - first + 100) * rate) / 1000 + largest + 1e-6);
          }
        },
      ),
    );
  });
});
