import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import { BUSY_QUIET_MS, DatabaseOutage } from './database-outage.js';

describe('DatabaseOutage: one line when an outage begins, one when it ends', () => {
  let lines: Array<[string, unknown, string]>;

  beforeEach(() => {
    jest.useFakeTimers();
    lines = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((fields: unknown, message?: unknown) => void lines.push(['warn', fields, String(message)]));
    jest.spyOn(Logger.prototype, 'log').mockImplementation((fields: unknown, message?: unknown) => void lines.push(['log', fields, String(message)]));
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('an unreachable database: a warning at the first refusal, nothing for the next ones, one line when a connection succeeds', () => {
    const outage = new DatabaseOutage(() => Date.now());
    outage.refused('unreachable', 'ECONNREFUSED');
    jest.advanceTimersByTime(4000);
    outage.refused('unreachable', 'ECONNREFUSED');
    outage.refused('unreachable', '57P03');
    jest.advanceTimersByTime(BUSY_QUIET_MS * 3);
    // No request for a while is not the end of an unreachable database.
    expect(outage.isOngoing('unreachable')).toBe(true);
    outage.connected();
    outage.connected();
    expect(lines).toEqual([
      ['warn', { cause: 'unreachable', code: 'ECONNREFUSED' }, expect.stringContaining('Database unreachable')],
      ['log', { cause: 'unreachable', durationMs: 4000 + BUSY_QUIET_MS * 3, refused: 3 }, 'Database serving again'],
    ]);
    expect(outage.isOngoing('unreachable')).toBe(false);
  });

  it('a busy pool ends once no request was refused for the quiet period, counted from the last refusal', () => {
    const outage = new DatabaseOutage(() => Date.now());
    outage.refused('pool-busy', 'connection');
    jest.advanceTimersByTime(BUSY_QUIET_MS - 1000);
    outage.refused('pool-busy', 'connection');
    jest.advanceTimersByTime(BUSY_QUIET_MS - 1);
    expect(outage.isOngoing('pool-busy')).toBe(true);
    jest.advanceTimersByTime(1);
    expect(outage.isOngoing('pool-busy')).toBe(false);
    expect(lines).toEqual([
      ['warn', { cause: 'pool-busy', code: 'connection' }, expect.stringContaining('Database pool busy')],
      ['log', { cause: 'pool-busy', durationMs: 2 * BUSY_QUIET_MS - 1000, refused: 2 }, 'Database serving again'],
    ]);
    // A new connection does not end a busy pool or an overloaded database, only an unreachable one.
    outage.refused('overloaded', '57014');
    outage.connected();
    expect(outage.isOngoing('overloaded')).toBe(true);
  });

  it('once the service stops, a session its own stop terminates is not an outage', () => {
    const outage = new DatabaseOutage(() => Date.now());
    outage.stop();
    outage.refused('unreachable', '57P01');

    expect(lines).toEqual([]);
    expect(outage.isOngoing('unreachable')).toBe(false);
  });
});
