import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { DeviceEventQueries } from '../../events/index.js';
import { parseShareChanges, SHARES_TOPIC, SharingService } from '../../sharing/index.js';
import { MEMBERS_TOPIC, OrganizationsService, parseMembershipChanges } from '../../organizations/index.js';
import { DeviceLogFeed, type StoredLogLines } from '../../device-logs/index.js';
import { TelemetryFeed, type StoredTelemetry } from '../../telemetry/index.js';
import { LiveBus, MAX_MESSAGE_LENGTH, WATCHING_RENEW_MS, type TelemetryMessage } from '../domain/live-bus.js';
import { eventFrame, joinFrames, logFrame, telemetryFrame } from '../domain/sse.js';
import { StreamHub } from './stream-hub.js';

/** The channel the device_events trigger (migration LiveStream) names new events on, at their commit. */
export const EVENTS_CHANNEL = 'device_cloud_events';

/**
 * Brings what happens to the streams of this instance, whichever instance it happened on.
 *
 * Telemetry: each ingest flush of this instance goes to its own streams at once, and to the other
 * instances over the LiveBus (PostgreSQL NOTIFY, or Redis with REDIS_URL), but only while there
 * are streams to see it: here, or on an instance that announced it has some (it does every
 * WATCHING_RENEW_MS while it has streams, and before its first stream opens). With no stream
 * anywhere a flush costs nothing more than the write. Events of the log: a
 * trigger names them on PostgreSQL's LISTEN/NOTIFY when their transaction commits, on every
 * instance, whoever recorded them; an instance with streams reads them in one query per batch.
 */
@Injectable()
export class LiveRelay implements OnModuleDestroy {
  private readonly logger = new Logger(LiveRelay.name);
  private pendingEvents = new Set<string>();
  /** The latest share load started per account (loadShares). */
  private readonly shareLoads = new Map<string, number>();
  /** The latest membership load started per account (loadOrganizations). */
  private readonly organizationLoads = new Map<string, number>();
  private loading = false;
  private publishWarned = false;
  private announceWarned = false;
  private announcedAt = -Infinity;
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly hub: StreamHub,
    private readonly bus: LiveBus,
    private readonly events: DeviceEventQueries,
    private readonly sharing: SharingService,
    private readonly organizations: OrganizationsService,
    telemetry: TelemetryFeed,
    logs: DeviceLogFeed,
    feed: ChangeFeed,
  ) {
    telemetry.subscribe((stored) => this.stored(stored));
    logs.subscribe((stored) => this.logged(stored));
    bus.subscribe((message) => this.hub.deliver(message.ownerId, message.deviceId, message.frames));
    feed.listen(EVENTS_CHANNEL, (payload) => this.eventsCommitted(payload));
    feed.subscribe(SHARES_TOPIC, (key) => this.sharesChanged(key));
    feed.subscribe(MEMBERS_TOPIC, (key) => this.membershipsChanged(key));
    this.renewal = setInterval(() => {
      if (this.hub.size > 0) void this.announce();
    }, WATCHING_RENEW_MS).unref();
  }

  /**
   * Before a stream opens: unless this instance said so within WATCHING_RENEW_MS (so the others'
   * leases still run for at least twice that), the others hear that it has streams before the
   * stream's first byte is written. A bus that cannot be reached does not keep the stream from
   * opening; the next renewal tries again.
   */
  async watching(): Promise<void> {
    if (Date.now() - this.announcedAt < WATCHING_RENEW_MS) return;
    await this.announce();
  }

  onModuleDestroy(): void {
    clearInterval(this.renewal);
  }

  /**
   * A share changed: the device leaves the account's streams here at once (fail closed: a revoked
   * share delivers nothing more), then the shares are read again (a new or rebound share arrives).
   */
  private sharesChanged(key: string): void {
    const changes = parseShareChanges(key);
    const users = changes === '*' ? this.hub.shareeAccounts() : new Set(changes.map((change) => change.userId));
    if (changes !== '*') for (const change of changes) this.hub.dropShare(change.userId, change.deviceId);
    for (const userId of users) if (this.hub.hasStreams(userId)) void this.loadShares(userId);
  }

  /**
   * Reads what is shared with `userId` and gives it to their streams here: at a stream's opening,
   * and whenever a share of theirs changes (SHARES_CHANNEL, sent at the commit of the change on
   * any instance). Of two loads for the same account only the later one is applied.
   */
  loadShares(userId: string): Promise<void> {
    return this.latestLoad(this.shareLoads, userId, {
      read: () => this.sharing.activeSharesOf(userId),
      apply: (shares) => this.hub.setShares(userId, shares),
      // Fail closed: a stream that cannot learn its shares sees none until the next change.
      failed: new Map(),
      what: "Could not read the devices shared with a stream's account",
    });
  }

  /**
   * A membership changed: as sharesChanged, for the organizations' devices; the account's shares
   * are read again too, as those with its organizations came or went with the membership.
   */
  private membershipsChanged(key: string): void {
    const changes = parseMembershipChanges(key);
    const users = changes === '*' ? this.hub.shareeAccounts() : new Set(changes.map((change) => change.userId));
    if (changes !== '*') for (const change of changes) this.hub.dropOrganization(change.userId, change.organizationId);
    for (const userId of users) {
      if (!this.hub.hasStreams(userId)) continue;
      void this.loadOrganizations(userId);
      void this.loadShares(userId);
    }
  }

  /** Reads the organizations `userId` is a member of and gives them to their streams here: at a stream's opening, and at each change of theirs. */
  loadOrganizations(userId: string): Promise<void> {
    return this.latestLoad(this.organizationLoads, userId, {
      read: () => this.organizations.memberOrganizationsOf(userId),
      apply: (organizations) => this.hub.setOrganizations(userId, organizations),
      // Fail closed: a stream that cannot learn its memberships sees only its own account's devices until the next change.
      failed: new Set<string>(),
      what: "Could not read the organizations of a stream's account",
    });
  }

  /** Reads what an account's streams may see and applies it, unless a later load for the account started meanwhile; `failed` when the read fails. */
  private async latestLoad<T>(loads: Map<string, number>, userId: string, load: { read: () => Promise<T>; apply: (value: T) => void; failed: T; what: string }): Promise<void> {
    const mine = (loads.get(userId) ?? 0) + 1;
    loads.set(userId, mine);
    try {
      const value = await load.read();
      if (loads.get(userId) === mine) load.apply(value);
    } catch (error) {
      if (loads.get(userId) === mine) load.apply(load.failed);
      this.logger.warn({ err: error }, load.what);
    } finally {
      if (loads.get(userId) === mine) loads.delete(userId);
    }
  }

  private async announce(): Promise<void> {
    try {
      await this.bus.announce();
      this.announcedAt = Date.now();
      this.announceWarned = false;
    } catch (error) {
      if (!this.announceWarned) this.logger.warn({ err: error }, 'Could not tell the other instances that this one has streams; their telemetry reaches them once it can');
      this.announceWarned = true;
    }
  }

  private stored(flush: StoredTelemetry[]): void {
    this.relay(() => flush.filter((device) => device.records.length > 0).map((device) => ({ ...device, frames: device.records.map((record) => telemetryFrame(device.deviceId, record)) })));
  }

  /** Log lines go where telemetry goes, the same way. */
  private logged(stored: StoredLogLines): void {
    this.relay(() => [{ ...stored, frames: stored.lines.map((line) => logFrame(stored.deviceId, line)) }]);
  }

  /** Frames of devices to the streams here and, while other instances have streams, to them; built only when someone watches. */
  private relay(framesOf: () => Array<{ deviceId: string; ownerId: string | null; frames: string[] }>): void {
    const here = this.hub.size > 0;
    const elsewhere = this.bus.othersWatching;
    if (!here && !elsewhere) return;
    const messages: TelemetryMessage[] = [];
    for (const device of framesOf()) {
      for (const piece of joinFrames(device.frames, MAX_MESSAGE_LENGTH)) messages.push({ ownerId: device.ownerId, deviceId: device.deviceId, frames: piece });
    }
    if (here) for (const message of messages) this.hub.deliver(message.ownerId, message.deviceId, message.frames);
    if (!elsewhere) return;
    this.bus.publish(messages).then(
      () => (this.publishWarned = false),
      (error: unknown) => {
        if (!this.publishWarned) this.logger.warn({ err: error }, 'Could not pass stored telemetry and log lines on to the other instances');
        this.publishWarned = true;
      },
    );
  }

  private eventsCommitted(payload: string): void {
    if (this.hub.size === 0) return;
    for (const sequence of payload.split(',')) if (/^[1-9][0-9]{0,18}$/.test(sequence)) this.pendingEvents.add(sequence);
    void this.loadEvents();
  }

  /** One query at a time; what is named meanwhile waits for the next. */
  private async loadEvents(): Promise<void> {
    if (this.loading || this.pendingEvents.size === 0) return;
    this.loading = true;
    const sequences = [...this.pendingEvents];
    this.pendingEvents = new Set();
    try {
      for (const event of await this.events.byIds(sequences)) this.hub.deliver(event.ownerId, event.deviceId, eventFrame(event), event.id);
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not read new events for the dashboard streams; they stay in the log (GET /dashboard/events)');
    } finally {
      this.loading = false;
      void this.loadEvents();
    }
  }
}
