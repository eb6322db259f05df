import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { ShutdownState } from '../../../health/shutdown-state.js';
import { DomainError } from '../../../shared/domain-error.js';
import { HEARTBEAT, OPENING } from '../domain/sse.js';
import { Subscriber, type StreamSink, type StreamViewer } from './stream-subscriber.js';

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
  /** Streams of the members of an organization (not its personal account's: byUser has those), by organization id. */
  private readonly members = new Map<string, Set<Subscriber>>();
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
    const members = ownerId === null ? undefined : this.members.get(ownerId);
    if (members) for (const member of members) if (member.viewer.userId !== ownerId && !member.viewer.isAdmin && member.sees(ownerId, deviceId)) member.send(frame, eventId);
    const sharees = ownerId === null ? undefined : this.sharees.get(deviceId);
    if (sharees) {
      for (const sharee of sharees) {
        // A member of the owning organization had it above.
        if (sharee.viewer.userId !== ownerId && !sharee.viewer.isAdmin && !sharee.organizations.has(ownerId!) && sharee.sees(ownerId, deviceId)) sharee.send(frame, eventId);
      }
    }
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

  /** The organizations `userId` is a member of now, for every stream of theirs here: a removal ends delivery at once. */
  setOrganizations(userId: string, organizations: ReadonlySet<string>): void {
    for (const subscriber of this.byUser.get(userId) ?? []) if (!subscriber.viewer.isAdmin) this.indexOrganizations(subscriber, organizations);
  }

  /** Stops delivering the organization's devices to `userId`'s streams here, until setOrganizations says otherwise. */
  dropOrganization(userId: string, organizationId: string): void {
    for (const subscriber of this.byUser.get(userId) ?? []) {
      if (!subscriber.organizations.has(organizationId)) continue;
      const organizations = new Set(subscriber.organizations);
      organizations.delete(organizationId);
      this.indexOrganizations(subscriber, organizations);
    }
  }

  private indexOrganizations(subscriber: Subscriber, organizations: ReadonlySet<string>): void {
    this.unindexOrganizations(subscriber);
    subscriber.organizations = organizations;
    for (const organizationId of organizations) {
      let set = this.members.get(organizationId);
      if (!set) this.members.set(organizationId, (set = new Set()));
      set.add(subscriber);
    }
  }

  private unindexOrganizations(subscriber: Subscriber): void {
    for (const organizationId of subscriber.organizations) {
      const set = this.members.get(organizationId);
      if (set?.delete(subscriber) && set.size === 0) this.members.delete(organizationId);
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
    this.unindexOrganizations(subscriber);
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
