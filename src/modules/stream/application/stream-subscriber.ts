/** The account a stream is open for. */
export interface StreamViewer {
  userId: string;
  isAdmin: boolean;
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

  /** The organizations the viewer is a bound member of (their personal one included). */
  organizations: ReadonlySet<string> = new Set();

  /**
   * The sharing module's rule for what happens live: the viewer owned the device then (through their
   * personal organization or as a member of the owning one), holds an active share granted by that
   * owner, or is an administrator.
   */
  sees(ownerId: string | null, deviceId: string): boolean {
    if (this.deviceId !== null && this.deviceId !== deviceId) return false;
    return this.viewer.isAdmin || ownerId === this.viewer.userId || (ownerId !== null && (this.organizations.has(ownerId) || this.shares.get(deviceId) === ownerId));
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
