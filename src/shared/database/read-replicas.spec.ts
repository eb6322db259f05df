import { lagMs, parseLsn } from './read-replicas.js';

describe('parseLsn', () => {
  it('reads both halves as hexadecimal, the high one shifted by 32 bits', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('0/16B3748')).toBe(0x16b3748n);
    expect(parseLsn('16/B374D848')).toBe(0x16b374d848n);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
  });
});

describe('lagMs', () => {
  // The primary wrote up to 100 by t=1000, 200 by t=2000, 300 by t=3000.
  const samples = [
    { at: 1000, lsn: 100n },
    { at: 2000, lsn: 200n },
    { at: 3000, lsn: 300n },
  ];

  it('is 0 for a replica that has everything the newest sample had (an idle primary included)', () => {
    expect(lagMs(samples, 300n, 3500)).toBe(0);
    expect(lagMs(samples, 350n, 3500)).toBe(0);
  });

  it('is the time since the newest sample the replica had fully replayed: never short', () => {
    // It lacks something written after t=2000: at most 1500 ms old, at least 500.
    expect(lagMs(samples, 250n, 3500)).toBe(1500);
    expect(lagMs(samples, 200n, 3500)).toBe(1500);
    expect(lagMs(samples, 150n, 3500)).toBe(2500);
  });

  it('is unknown without samples, or for a replica older than the oldest one kept', () => {
    expect(lagMs([], 100n, 3500)).toBeNull();
    expect(lagMs(samples, 99n, 3500)).toBeNull();
  });
});
