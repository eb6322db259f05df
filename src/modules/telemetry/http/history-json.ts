import type { History } from '../application/telemetry-history.service.js';
import type { BucketColumns } from '../domain/telemetry-history.queries.js';
import { TelemetryHistoryResponse } from './telemetry-history.dto.js';

const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));

/**
 * Whole Unix seconds as Date#toISOString writes them ("2026-11-21T12:05:00.000Z"), each UTC day's
 * date formatted once: a series' points come in order, so the day seldom changes.
 */
export class SecondsFormatter {
  private day = NaN;
  private date = '';

  format(seconds: number): string {
    if (!Number.isSafeInteger(seconds)) return new Date(seconds * 1000).toISOString();
    const day = Math.floor(seconds / 86_400);
    if (day !== this.day) {
      const iso = new Date(day * 86_400_000).toISOString();
      this.day = day;
      this.date = iso.slice(0, iso.length - '00:00:00.000Z'.length);
    }
    const time = seconds - day * 86_400;
    return `${this.date}${TWO_DIGITS[Math.floor(time / 3600)]}:${TWO_DIGITS[Math.floor(time / 60) % 60]}:${TWO_DIGITS[time % 60]}.000Z`;
  }
}

/** A number as JSON.stringify writes it. */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');

/**
 * The points of each run as JSON text in UTF-8, kept as long as the run is: a run held in memory
 * across answers (HistoryChunkCache) is written once. Bytes rather than a string: Fastify measures
 * a string body's length and encodes it on every send, which cost more than the rest of a 24-hour
 * answer once its runs came from memory (bench/README.md).
 */
const RUN_JSON = new WeakMap<BucketColumns, Buffer>();

function runJson(run: BucketColumns): Buffer {
  let bytes = RUN_JSON.get(run);
  if (bytes !== undefined) return bytes;
  const instants = new SecondsFormatter();
  const { ts, avg, min, max, count } = run;
  let json = '';
  for (let i = 0; i < ts.length; i++) {
    json += `${i === 0 ? '' : ','}{"ts":"${instants.format(ts[i])}","avg":${jsonNumber(avg[i])},"min":${jsonNumber(min[i])},"max":${jsonNumber(max[i])},"count":${jsonNumber(count[i])}}`;
  }
  // A buffer of its own: a slice of the shared 8 kB pool of Node would keep the whole slab alive as long as the run is kept.
  bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  bytes.write(json);
  RUN_JSON.set(run, bytes);
  return bytes;
}

const bytesOf = (text: string): Buffer => Buffer.from(text);
const COMMA = bytesOf(',');
const SERIES_END = bytesOf(']}');
const ANSWER_END = bytesOf('],"nextCursor":null}');

/**
 * The body of TelemetryHistoryResponse: its JSON text in UTF-8. Bucket answers are written
 * straight from the query's columns: building a point object per bucket and handing them to
 * JSON.stringify was a quarter of a history request's CPU (bench S3 profile: stringify 15 %,
 * formatting instants 6 %, the objects and the garbage they leave). The text is the same, byte for
 * byte, as JSON.stringify of the response object (history-json.spec.ts); raw answers take that way.
 */
export function historyBody(history: History): Buffer {
  if (history.kind === 'raw') return Buffer.from(JSON.stringify(TelemetryHistoryResponse.from(history)));
  const pieces: Buffer[] = [Buffer.from(`{"deviceId":${JSON.stringify(history.deviceId)},"from":"${history.from.toISOString()}","to":"${history.to.toISOString()}","bucketSec":${jsonNumber(history.bucketSec)},"series":[`)];
  for (let s = 0; s < history.series.length; s++) {
    const { metric, batteryId, runs } = history.series[s];
    pieces.push(Buffer.from(`${s === 0 ? '' : ','}{"metric":${JSON.stringify(metric)},"batteryId":${JSON.stringify(batteryId)},"points":[`));
    let first = true;
    for (const run of runs) {
      if (run.ts.length === 0) continue;
      if (!first) pieces.push(COMMA);
      pieces.push(runJson(run));
      first = false;
    }
    pieces.push(SERIES_END);
  }
  pieces.push(ANSWER_END);
  return Buffer.concat(pieces);
}

/** historyBody as a string. */
export function historyJson(history: History): string {
  return historyBody(history).toString('utf8');
}
