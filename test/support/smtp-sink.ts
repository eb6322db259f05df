import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope recipients (RCPT TO), lower-cased. */
  to: string[];
  /** The From header, decoded, e.g. `Device Cloud <no-reply@example.com>`. */
  from: string;
  /** Envelope sender (MAIL FROM). */
  envelopeFrom: string;
  subject: string;
  /** The text/plain body, transfer encoding undone, line ends normalised to \n. */
  text: string;
  raw: string;
}

export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  url: string;
  /** Every message accepted so far, in arrival order. */
  messages: ReceivedMail[];
  /** The messages to one address so far. */
  messagesTo(address: string): ReceivedMail[];
  /**
   * The first message to `address` that no earlier waitForMessage call returned; polls every 10 ms
   * and fails after timeoutMs. Calling it twice for one address waits for the second message.
   */
  waitForMessage(address: string, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

const POLL_INTERVAL_MS = 10;

function splitHeadAndBody(raw: string): { head: string; body: string } {
  const match = /\r?\n\r?\n/.exec(raw);
  return match ? { head: raw.slice(0, match.index), body: raw.slice(match.index + match[0].length) } : { head: raw, body: '' };
}

/** Header names (lower-cased) to unfolded values; the first occurrence wins. */
function parseHeaders(head: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}

function decodeQuotedPrintable(text: string): Buffer {
  const softBreaksRemoved = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < softBreaksRemoved.length; i++) {
    const hex = softBreaksRemoved.slice(i + 1, i + 3);
    if (softBreaksRemoved[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(softBreaksRemoved[i], 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

/** RFC 2047 encoded words (=?UTF-8?B?...?= and =?UTF-8?Q?...?=), as nodemailer writes non-ASCII headers. */
function decodeHeaderValue(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[BbQq]\?[^?]*\?=)\s+(?==\?)/g, '$1')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_word, _charset: string, encoding: string, encoded: string) =>
      encoding.toUpperCase() === 'B' ? Buffer.from(encoded, 'base64').toString('utf8') : decodeQuotedPrintable(encoded.replace(/_/g, ' ')).toString('utf8'),
    );
}

function decodeBody(body: string, transferEncoding: string | undefined): string {
  switch (transferEncoding?.toLowerCase()) {
    case 'quoted-printable':
      return decodeQuotedPrintable(body).toString('utf8');
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    default:
      return body;
  }
}

/** The text/plain content of a message or MIME part, descending into multipart bodies. */
function plainTextOf(raw: string): string | undefined {
  const { head, body } = splitHeadAndBody(raw);
  const headers = parseHeaders(head);
  const contentType = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (/^multipart\//i.test(contentType) && boundary) {
    const parts = body.split(`--${boundary}`).slice(1, -1);
    for (const part of parts) {
      const text = plainTextOf(part.replace(/^\r?\n/, ''));
      if (text !== undefined) return text;
    }
    return undefined;
  }
  if (!/^text\/plain/i.test(contentType)) return undefined;
  return decodeBody(body, headers.get('content-transfer-encoding'));
}

function parseMessage(raw: string, envelope: { from: string; to: string[] }): ReceivedMail {
  const headers = parseHeaders(splitHeadAndBody(raw).head);
  return {
    to: envelope.to,
    from: decodeHeaderValue(headers.get('from') ?? ''),
    envelopeFrom: envelope.from,
    subject: decodeHeaderValue(headers.get('subject') ?? ''),
    text: (plainTextOf(raw) ?? '').replace(/\r\n/g, '\n'),
    raw,
  };
}

/**
 * A real SMTP server on 127.0.0.1 (random port) that accepts every message without TLS or
 * authentication and keeps it in memory (on `port`, when given: a server coming back where one was down). A message is recorded before the server answers 250 to
 * DATA, so once the application's send has returned, the message is already in `messages`.
 */
export async function startSmtpSink(options: { port?: number } = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const handedOut = new Set<ReceivedMail>();

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on('end', () => {
        try {
          messages.push(
            parseMessage(Buffer.concat(chunks).toString('utf8'), {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase()),
            }),
          );
          callback();
        } catch (error) {
          callback(error as Error);
        }
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;

  const messagesTo = (address: string) => messages.filter((message) => message.to.includes(address.toLowerCase()));

  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    messagesTo,
    async waitForMessage(address, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const message = messagesTo(address).find((candidate) => !handedOut.has(candidate));
        if (message) {
          handedOut.add(message);
          return message;
        }
        if (Date.now() >= deadline) throw new Error(`no new mail to ${address} within ${timeoutMs} ms (${messagesTo(address).length} received before)`);
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
