import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { ShutdownState } from '../../../health/shutdown-state.js';
import { DomainError } from '../../../shared/domain-error.js';
import { HEARTBEAT, OPENING } from '../domain/sse.js';

export interface StreamViewer {
  userId: string;
  isAdmin: boolean;
}

export class TooManyStreamsError extends DomainError {
  constructor(limit: number) {
    super('TOO_MANY_STREAMS', 'rate-limited', `At most ${limit} streams may be open at once for one account. Close one first.`, { retryAfterSec: 5, limiter: 'streams-per-user' });
  }
}

class StreamsUnavailableError extends DomainError {
  constructor(reason: string) {
    super('SERVICE_UNAVAILABLE', 'unavailable', reason, { retryAfterSec: 2 });
  }
}

/**
 * Where a stream's frames go: the connection (http/response-sink.ts). `backlog` is what was written
 * but not yet taken by the client, in bytes (characters before the connection starts).
 */
export interface StreamSink {
  readonly backlog: number;
  write(text: string): void;
  /** Ends the stream once what was written has gone out. */
  end(): void;
  /** Closes the connection at once; what the client has not taken is thrown away. */
  destroy(): void;
  /** Called once, when the connection closes for whatever reason (client gone, end, destroy). */
  onClose(listener: () => void): void;
}

/** How long a backlog above the bound is tolerated: a burst drains in far less. */
export const SLOW_CLIENT_GRACE_MS = 1000;
/** A backlog this many times the bound drops the stream at once, whatever its age. */
export const HARD_LIMIT_FACTOR = 16;

/**
 * One open stream, writing to its sink. Frames pass straight to the socket while the client reads;
 * when it does not, they wait in the response's buffer (its backlog). A stream whose backlog stays above the bound for more than SLOW_CLIENT_GRACE_MS, or ever exceeds
 * HARD_LIMIT_FACTOR times the bound, is dropped: one flush of many records is a burst that a
 * reading client takes in milliseconds, a client that stopped reading never takes it. While the
 * stream waits for its replay (resume with Last-Event-ID) frames are held, in order, under the
 * hard limit. With a coalescing window, a frame to a stream that wrote nothing during the last
 * window goes out at once; later ones wait in `queued` until the hub's next flush, so a busy stream
 * costs one socket write per window rather than one per frame, and a quiet one adds no latency.
 */
export class Subscriber {
  private held: Array<{ frame: string; eventId: string | null }> | null;
  private heldLength = 0;
  private closed = false;
  /** Since when the backlog has been above the bound (performance.now()); null while below. */
  private overSince: number | null = null;
  private queued = '';
  /** When the last frame went to the stream (performance.now()); comments do not count. */
  private lastWriteAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly viewer: StreamViewer,
    readonly deviceId: string | null,
    private readonly sink: StreamSink,
    private readonly maxBuffered: number,
    private readonly dropped: (subscriber: Subscriber) => void,
    /** Null: every frame is written at once; else the window and what to call when a frame is queued for it. */
    private readonly window: { ms: number; enqueue: (subscriber: Subscriber) => void } | null,
    resuming: boolean,
  ) {
    this.held = resuming ? [] : null;
  }

  /** Devices shared with the viewer, each with the owner who granted the share (it counts only while that owner has the device). */
  shares: ReadonlyMap<string, string> = new Map();

  /** The sharing module's rule for what happens live: the viewer owned the device then, holds an active share granted by that owner, or is an administrator. */
  sees(ownerId: string | null, deviceId: string): boolean {
    if (this.deviceId !== null && this.deviceId !== deviceId) return false;
    return this.viewer.isAdmin || ownerId === this.viewer.userId || (ownerId !== null && this.shares.get(deviceId) === ownerId);
  }

  send(frame: string, eventId: string | null = null): void {
    if (this.closed) return;
    if (!this.held && !this.window) return this.write(frame);
    if (!this.held) {
      if (this.queued.length === 0) {
        if (performance.now() - this.lastWriteAt >= this.window!.ms) return this.write(frame);
        this.window!.enqueue(this);
      }
      this.queued += frame;
      // A window that fills up goes out early: the wait is for economy, not a buffer of its own.
      if (this.queued.length > this.maxBuffered) this.flush();
      return;
    }
    this.held.push({ frame, eventId });
    this.heldLength += frame.length;
    if (this.heldLength > this.maxBuffered * HARD_LIMIT_FACTOR) this.dropped(this);
  }

  /** The replayed events, then what arrived meanwhile, less the events the replay already had. */
  resume(replayed: Array<{ frame: string; eventId: string }>): void {
    const held = this.held ?? [];
    this.held = null;
    const seen = new Set(replayed.map((event) => event.eventId));
    for (const event of replayed) this.write(event.frame);
    for (const entry of held) if (entry.eventId === null || !seen.has(entry.eventId)) this.write(entry.frame);
  }

  /** Writes what waited for the window, as one piece. */
  flush(): void {
    const queued = this.queued;
    this.queued = '';
    if (queued.length > 0) this.write(queued);
  }

  /** Write, unless the client is too slow (see the class): then it is dropped. */
  private write(frame: string): void {
    if (this.push(frame)) this.lastWriteAt = performance.now();
  }

  /** A comment (the opening, a heartbeat): written like a frame, but it leaves the stream quiet for the window. */
  comment(text: string): void {
    this.push(text);
  }

  private push(text: string): boolean {
    if (this.closed) return false;
    if (this.tooSlow(text.length)) {
      this.dropped(this);
      return false;
    }
    this.sink.write(text);
    return true;
  }

  /** Whether the client is too slow with `adding` more characters waiting. */
  private tooSlow(adding: number): boolean {
    const backlog = this.sink.backlog + adding;
    if (backlog <= this.maxBuffered) {
      this.overSince = null;
      return false;
    }
    if (backlog > this.maxBuffered * HARD_LIMIT_FACTOR) return true;
    const now = performance.now();
    this.overSince ??= now;
    return now - this.overSince > SLOW_CLIENT_GRACE_MS;
  }

  end(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.sink.end();
  }

  /** For a client that stopped reading: what it has not taken is thrown away with the connection. */
  destroy(): void {
    this.closed = true;
    this.queued = '';
    this.sink.destroy();
  }
}

/**
 * The dashboard streams open on this instance, by account, and what each may see: its owner's
 * devices and those shared with them (an administrator: every device), narrowed to one device on
 * request. Bounded three ways:
 * streams per account (STREAM_MAX_PER_USER, 429), streams in all (STREAM_MAX_CONNECTIONS, 503) and
 * bytes waiting for one slow client (STREAM_MAX_BUFFERED_BYTES, see Subscriber: it is dropped, and
 * no other stream waits for it). One timer sends every stream its heartbeat.
 */
@Injectable()
export class StreamHub implements OnModuleDestroy {
  private readonly logger = new Logger(StreamHub.name);
  private readonly byUser = new Map<string, Set<Subscriber>>();
  private readonly admins = new Set<Subscriber>();
  /** Streams of viewers a device is shared with, by device id. */
  private readonly sharees = new Map<string, Set<Subscriber>>();
  private count = 0;
  private heartbeat: NodeJS.Timeout | null = null;
  private closing = false;
  /** Streams with frames waiting for the coalescing window (STREAM_COALESCE_MS), and its timer. */
  private readonly queued = new Set<Subscriber>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly env: Env,
    private readonly shutdown: ShutdownState,
  ) {}

  get size(): number {
    return this.count;
  }

  /** Registers a stream on `sink`, or refuses it (429 past the account's cap, 503 when full or closing). */
  open(viewer: StreamViewer, deviceId: string | null, sink: StreamSink, resuming: boolean): Subscriber {
    // Once shutdown begins readiness is down: a new stream belongs on another instance. Open ones
    // stay until the listener closes (onModuleDestroy), so their clients move once, not twice.
    if (this.closing || this.shutdown.shuttingDown) throw new StreamsUnavailableError('The service is shutting down. Open the stream again.');
    const own = this.byUser.get(viewer.userId) ?? new Set<Subscriber>();
    if (own.size >= this.env.STREAM_MAX_PER_USER) throw new TooManyStreamsError(this.env.STREAM_MAX_PER_USER);
    if (this.count >= this.env.STREAM_MAX_CONNECTIONS) throw new StreamsUnavailableError('This instance serves as many streams as it can. Try again.');
    const window = this.env.STREAM_COALESCE_MS > 0 ? { ms: this.env.STREAM_COALESCE_MS, enqueue: (waiting: Subscriber) => this.enqueue(waiting) } : null;
    const subscriber = new Subscriber(viewer, deviceId, sink, this.env.STREAM_MAX_BUFFERED_BYTES, (slow) => this.drop(slow), window, resuming);
    own.add(subscriber);
    this.byUser.set(viewer.userId, own);
    if (viewer.isAdmin) this.admins.add(subscriber);
    this.count++;
    sink.onClose(() => this.remove(subscriber));
    subscriber.comment(OPENING);
    this.heartbeat ??= setInterval(() => this.beat(), this.env.STREAM_HEARTBEAT_MS).unref();
    return subscriber;
  }

  deliver(ownerId: string | null, deviceId: string, frame: string, eventId: string | null = null): void {
    const targets = ownerId === null ? undefined : this.byUser.get(ownerId);
    if (targets) for (const subscriber of targets) if (subscriber.sees(ownerId, deviceId)) subscriber.send(frame, eventId);
    for (const admin of this.admins) if (admin.viewer.userId !== ownerId && admin.sees(ownerId, deviceId)) admin.send(frame, eventId);
    const sharees = ownerId === null ? undefined : this.sharees.get(deviceId);
    if (sharees) for (const sharee of sharees) if (sharee.viewer.userId !== ownerId && !sharee.viewer.isAdmin && sharee.sees(ownerId, deviceId)) sharee.send(frame, eventId);
  }

  /** Accounts with streams open here. */
  hasStreams(userId: string): boolean {
    return this.byUser.has(userId);
  }

  /** What is shared with `userId` now, for every stream of theirs here: a revocation ends delivery at once. */
  setShares(userId: string, shares: ReadonlyMap<string, string>): void {
    for (const subscriber of this.byUser.get(userId) ?? []) if (!subscriber.viewer.isAdmin) this.indexShares(subscriber, shares);
  }

  /** Stops delivering `deviceId` to `userId`'s streams here as a sharee, until setShares says otherwise. */
  dropShare(userId: string, deviceId: string): void {
    for (const subscriber of this.byUser.get(userId) ?? []) {
      if (!subscriber.shares.has(deviceId)) continue;
      const shares = new Map(subscriber.shares);
      shares.delete(deviceId);
      this.indexShares(subscriber, shares);
    }
  }

  private indexShares(subscriber: Subscriber, shares: ReadonlyMap<string, string>): void {
    this.unindexShares(subscriber);
    subscriber.shares = shares;
    for (const deviceId of shares.keys()) {
      let set = this.sharees.get(deviceId);
      if (!set) this.sharees.set(deviceId, (set = new Set()));
      set.add(subscriber);
    }
  }

  /** Accounts (not administrators) with streams open here: whose shares to read again after the feed was down. */
  shareeAccounts(): Set<string> {
    const users = new Set<string>();
    for (const [userId, set] of this.byUser) for (const subscriber of set) if (!subscriber.viewer.isAdmin) users.add(userId);
    return users;
  }

  private unindexShares(subscriber: Subscriber): void {
    for (const deviceId of subscriber.shares.keys()) {
      const set = this.sharees.get(deviceId);
      if (set?.delete(subscriber) && set.size === 0) this.sharees.delete(deviceId);
    }
  }

  /** Shutdown: every stream ends (EventSource reconnects, to another instance), none opens, so the server can close. */
  onModuleDestroy(): void {
    this.closing = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.queued.clear();
    for (const set of this.byUser.values()) for (const subscriber of set) subscriber.end();
  }

  private enqueue(subscriber: Subscriber): void {
    this.queued.add(subscriber);
    this.flushTimer ??= setTimeout(() => this.flushQueued(), this.env.STREAM_COALESCE_MS);
  }

  private flushQueued(): void {
    this.flushTimer = null;
    const waiting = [...this.queued];
    this.queued.clear();
    for (const subscriber of waiting) subscriber.flush();
  }

  private drop(subscriber: Subscriber): void {
    this.logger.log('Dropped a dashboard stream whose client stopped reading');
    subscriber.destroy();
    this.remove(subscriber);
  }

  private remove(subscriber: Subscriber): void {
    const own = this.byUser.get(subscriber.viewer.userId);
    if (!own?.delete(subscriber)) return;
    this.queued.delete(subscriber);
    if (own.size === 0) this.byUser.delete(subscriber.viewer.userId);
    this.admins.delete(subscriber);
    this.unindexShares(subscriber);
    this.count--;
    if (this.count === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }

  private beat(): void {
    for (const set of [...this.byUser.values()]) for (const subscriber of [...set]) subscriber.comment(HEARTBEAT);
  }
}
