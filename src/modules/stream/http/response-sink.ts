import type { FastifyReply } from 'fastify';
import type { StreamSink } from '../application/stream-subscriber.js';

const STREAM_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' };

/**
 * A dashboard stream's connection. Frames are written to the response itself: no Readable piped
 * in between, whose per-frame bookkeeping a thousand busy streams would pay on every write.
 * Until `start` the stream may still be refused (404, 429, a failed replay), so what is written
 * meanwhile waits here and the answer is Fastify's; `start` takes the response over from Fastify,
 * sends the head with the headers the hooks set (CORS, helmet, request id) and what waited.
 */
export class ResponseSink implements StreamSink {
  /** What was written before `start`; null once started. */
  private waiting: string | null = '';
  private closed = false;
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly reply: FastifyReply) {
    reply.raw.once('close', () => this.close());
  }

  get backlog(): number {
    return this.waiting === null ? this.reply.raw.writableLength : this.waiting.length;
  }

  write(text: string): void {
    if (this.closed) return;
    if (this.waiting === null) this.reply.raw.write(text);
    else this.waiting += text;
  }

  /** The stream was accepted: from here on the response is this stream's. */
  start(): void {
    this.reply.hijack();
    const raw = this.reply.raw;
    if (this.closed) {
      raw.destroy();
      return;
    }
    for (const [name, value] of Object.entries(this.reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
    // On HTTP/1.1 the stream lasts as long as its connection (`Connection: close`, which Node then
    // adds), so it needs no chunked framing: each write is one plain socket write, not three
    // pieces gathered on the next tick. HTTP/2 frames it its own way.
    if (this.reply.request.raw.httpVersionMajor === 1) raw.useChunkedEncodingByDefault = false;
    raw.writeHead(200, STREAM_HEADERS);
    const waiting = this.waiting ?? '';
    this.waiting = null;
    if (waiting.length > 0) raw.write(waiting);
  }

  end(): void {
    // Not started: the request is still Fastify's, which answers it (a refusal, an error).
    if (this.waiting !== null) return this.close();
    this.reply.raw.end();
  }

  destroy(): void {
    if (this.waiting !== null) return this.close();
    this.reply.raw.destroy();
  }

  onClose(listener: () => void): void {
    this.listeners.push(listener);
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.waiting !== null) this.waiting = '';
    for (const listener of this.listeners) listener();
  }
}
