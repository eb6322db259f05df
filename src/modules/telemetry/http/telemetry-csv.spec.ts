import { Writable } from 'node:stream';
import type { TelemetryExport } from '../application/telemetry-history.service.js';
import { csvField, csvHeader, csvLines, csvStream } from './telemetry-csv.js';

describe('telemetry CSV (RFC 4180)', () => {
  it('quotes a field holding a comma, a double quote, CR or LF, and doubles its quotes; leaves others as they are', () => {
    expect(csvField('main')).toBe('main');
    expect(csvField('bat:1.a_b-2')).toBe('bat:1.a_b-2');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('one\ntwo')).toBe('"one\ntwo"');
    expect(csvField('one\rtwo')).toBe('"one\rtwo"');
    expect(csvField('')).toBe('');
  });

  it('a header and one line per record, CRLF after each; a metric the record lacks is an empty field; numbers as JSON writes them', () => {
    const metrics = ['current', 'soc', 'voltage'];
    const text =
      csvHeader(metrics) +
      csvLines(
        [
          { ts: new Date('2026-11-21T12:00:00Z'), battery_id: 'main', metrics: { soc: 52.1, voltage: 13.2, current: -0 } },
          { ts: new Date('2026-11-21T12:00:10.5Z'), battery_id: 'a,"b"', metrics: { voltage: 1e-7, current: 1e12 } },
          { ts: new Date('2026-11-21T12:00:20Z'), battery_id: 'main', metrics: {} },
        ],
        metrics,
      );

    expect(text).toBe(
      'ts,batteryId,current,soc,voltage\r\n' +
        '2026-11-21T12:00:00.000Z,main,0,52.1,13.2\r\n' +
        '2026-11-21T12:00:10.500Z,"a,""b""",1000000000000,,1e-7\r\n' +
        '2026-11-21T12:00:20.000Z,main,,,\r\n',
    );
    expect(JSON.stringify([1e-7, 1e12, -0])).toBe('[1e-7,1000000000000,0]');
  });
});

describe('csvStream: the export as a byte stream', () => {
  /** An export of `batches` batches of 2,000 records that counts how many batches were taken from it and how often it was closed. */
  function anExport(batches: number) {
    const counts = { pulled: 0, closed: 0 };
    const exported: TelemetryExport = {
      deviceId: 'gw-0001',
      from: new Date('2026-11-21T00:00:00Z'),
      to: new Date('2026-11-22T00:00:00Z'),
      metrics: ['soc', 'voltage'],
      async *batches() {
        for (let i = 0; i < batches; i++) {
          counts.pulled += 1;
          yield Array.from({ length: 2000 }, (_, k) => ({ ts: new Date(Date.UTC(2026, 10, 21) + (i * 2000 + k) * 1000), battery_id: 'main', metrics: { soc: k % 100, voltage: 13.2 } }));
        }
      },
      close: async () => {
        counts.closed += 1;
      },
    };
    return { exported, counts };
  }

  const ticks = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise((resume) => setImmediate(resume));
  };

  it('takes the next batch only when the response has taken the previous one: a writer that stops taking stops the reads', async () => {
    const { exported, counts } = anExport(1000);
    const stuck = new Writable({ highWaterMark: 16 * 1024, write: () => undefined });
    csvStream(exported).pipe(stuck);

    await ticks(200);

    // One batch in the writer, one in the stream's buffer, one being formatted: never the 1,000.
    expect(counts.pulled).toBeLessThanOrEqual(3);
    stuck.destroy();
  });

  it('streams every line in order, and closes the export once at the end', async () => {
    const { exported, counts } = anExport(3);
    let text = '';
    for await (const chunk of csvStream(exported)) text += String(chunk);
    await ticks(2);

    const lines = text.split('\r\n');
    expect(lines[0]).toBe('ts,batteryId,soc,voltage');
    expect(lines).toHaveLength(1 + 6000 + 1);
    expect(lines[6000]).toBe(`${new Date(Date.UTC(2026, 10, 21) + 5999 * 1000).toISOString()},main,99,13.2`);
    expect(lines[6001]).toBe('');
    expect(counts.closed).toBeGreaterThanOrEqual(1);
  });

  it('a stream destroyed before it was read (the client went away at once) still closes the export', async () => {
    const { exported, counts } = anExport(3);
    const stream = csvStream(exported);
    stream.destroy();
    await ticks(5);

    expect(counts.pulled).toBe(0);
    expect(counts.closed).toBe(1);
  });

  it('a stream destroyed half-way closes the export and takes no more batches', async () => {
    const { exported, counts } = anExport(1000);
    const stream = csvStream(exported);
    const reader = stream[Symbol.asyncIterator]();
    await reader.next();
    await reader.next();
    stream.destroy();
    await ticks(5);
    const pulled = counts.pulled;
    await ticks(20);

    expect(counts.pulled).toBe(pulled);
    expect(pulled).toBeLessThan(10);
    expect(counts.closed).toBeGreaterThanOrEqual(1);
  });
});
