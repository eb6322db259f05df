import { connect, type Socket } from 'node:net';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

/**
 * Gateways upload every 60 s over one kept-alive connection: the service must keep an idle
 * connection open longer than that, or every upload pays a new connection (and TLS handshake).
 * One raw TCP connection per test, so what is seen is the server's doing, not a client agent's.
 */
interface Connection {
  /** Sends GET `path` and resolves with the status line and the Keep-Alive header of the answer. */
  get(path: string): Promise<{ status: number; keepAlive: string | undefined }>;
  /** Resolves when the server closes the connection. */
  closed: Promise<void>;
  socket: Socket;
}

async function openConnection(port: number): Promise<Connection> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((done, fail) => socket.once('connect', done).once('error', fail));
  let received = '';
  let waiting: (() => void) | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
    waiting?.();
  });
  let isClosed = false;
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  void closed.then(() => (isClosed = true));
  const get = (path: string) =>
    new Promise<{ status: number; keepAlive: string | undefined }>((done, fail) => {
      if (isClosed) return fail(new Error('the server has closed the connection'));
      received = '';
      const parse = () => {
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = received.slice(0, end).split('\r\n');
        const length = Number(/^content-length:\s*(\d+)$/im.exec(head.join('\n'))?.[1] ?? 0);
        if (received.length < end + 4 + length) return;
        waiting = undefined;
        done({ status: Number(head[0].split(' ')[1]), keepAlive: /^keep-alive:\s*(.+)$/im.exec(head.join('\n'))?.[1] });
      };
      waiting = parse;
      socket.once('close', () => fail(new Error('the server closed the connection')));
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    });
  return { get, closed, socket };
}

const portOf = (t: TestApp) => Number(new URL(t.baseUrl).port);
const idle = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('keep-alive', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('announces 72 s, and serves a request on a connection idle for 12 s, longer than the 10 s it used to keep', async () => {
    const connection = await openConnection(portOf(t));
    try {
      expect(await connection.get('/health/live')).toEqual({ status: 200, keepAlive: 'timeout=72' });

      // Beyond the old 10 s and the 1 s Node adds to it (keepAliveTimeoutBuffer).
      await idle(12_000);

      expect(await connection.get('/health/live')).toEqual({ status: 200, keepAlive: 'timeout=72' });
    } finally {
      connection.socket.destroy();
    }
  }, 30_000);

  it('closes a connection idle for longer than KEEP_ALIVE_TIMEOUT_MS', async () => {
    const short = await createTestApp({ KEEP_ALIVE_TIMEOUT_MS: '1000' });
    const connection = await openConnection(portOf(short));
    try {
      expect(await connection.get('/health/live')).toEqual({ status: 200, keepAlive: 'timeout=1' });
      const answered = Date.now();
      await connection.closed;
      // 1 s and Node's 1 s buffer, measured from the end of the answer.
      expect(Date.now() - answered).toBeGreaterThanOrEqual(900);
      expect(Date.now() - answered).toBeLessThan(5000);
    } finally {
      connection.socket.destroy();
      await short.close();
    }
  }, 30_000);
});
