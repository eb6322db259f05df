import http from 'node:http';

export interface SseMessage {
  event: string;
  id: string | null;
  data: string;
  /** When the message's last line arrived (performance.now()). */
  at: number;
}

/** An open dashboard stream, parsed as EventSource would: messages, comments, and how it ended. */
export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  messages: SseMessage[];
  comments: string[];
  /** The raw body, when the answer was not a stream (a problem document). */
  body: string;
  ended: boolean;
  /** Resolves with the first message (already received or to come) that `match` accepts. */
  next(match: (message: SseMessage) => boolean, timeoutMs?: number): Promise<SseMessage>;
  /** Resolves when the server ends the stream or the connection drops. */
  closed(timeoutMs?: number): Promise<void>;
  close(): void;
}

/**
 * GET `url` and parse the answer as Server-Sent Events. Resolves once the status and headers are
 * in (for a refusal, once its whole body is).
 */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (response) => {
      const waiting = new Set<() => void>();
      const stream: SseStream = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        messages: [],
        comments: [],
        body: '',
        ended: false,
        next(match, timeoutMs = 5000) {
          return new Promise((found, fail) => {
            const check = () => {
              const message = stream.messages.find(match);
              if (message) {
                done();
                found(message);
              } else if (stream.ended) {
                done();
                fail(new Error('the stream ended before the message came'));
              }
            };
            const timer = setTimeout(() => {
              done();
              fail(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(stream.messages.map((m) => m.event))}`));
            }, timeoutMs);
            const done = () => {
              clearTimeout(timer);
              waiting.delete(check);
            };
            waiting.add(check);
            check();
          });
        },
        closed(timeoutMs = 5000) {
          return new Promise((ended, fail) => {
            const check = () => {
              if (!stream.ended) return;
              clearTimeout(timer);
              waiting.delete(check);
              ended();
            };
            const timer = setTimeout(() => {
              waiting.delete(check);
              fail(new Error(`the stream was still open after ${timeoutMs} ms`));
            }, timeoutMs);
            waiting.add(check);
            check();
          });
        },
        close() {
          request.destroy();
        },
      };
      const notify = () => {
        for (const check of [...waiting]) check();
      };
      const isStream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (!isStream) {
          stream.body += chunk;
          return;
        }
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const message: SseMessage = { event: 'message', id: null, data: '', at: performance.now() };
          let hasField = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) stream.comments.push(line.slice(1).trim());
            else {
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
              if (field === 'event') message.event = value;
              else if (field === 'id') message.id = value;
              else if (field === 'data') message.data = message.data ? `${message.data}\n${value}` : value;
              if (field === 'event' || field === 'id' || field === 'data') hasField = true;
            }
          }
          if (hasField && message.data !== '') stream.messages.push(message);
        }
        notify();
      });
      const finish = () => {
        stream.ended = true;
        notify();
      };
      response.on('end', finish);
      response.on('close', finish);
      response.on('error', finish);
      if (isStream) resolve(stream);
      else response.on('end', () => resolve(stream));
    });
    request.on('error', reject);
  });
}

/** The JSON of a message's data. */
export function dataOf<T = Record<string, unknown>>(message: SseMessage): T {
  return JSON.parse(message.data) as T;
}
