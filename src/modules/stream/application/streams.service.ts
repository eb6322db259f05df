import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../../shared/domain-error.js';
import { eventFrame } from '../domain/sse.js';
import { DeviceEventQueries } from '../../events/index.js';
import { DeviceAccess } from '../../sharing/index.js';
import { LiveRelay } from './live-relay.js';
import { StreamHub } from './stream-hub.js';
import type { StreamSink, StreamViewer } from './stream-subscriber.js';

/** Events a resumed stream gets back at most; older ones are in GET /dashboard/events. */
export const MAX_REPLAYED_EVENTS = 1000;

export interface StreamRequest {
  deviceId: string | null;
  /** The sequence of Last-Event-ID: replay the events after it. */
  resumeAfter: string | null;
}

/** Opens a dashboard stream: checks what it asks for, registers it, replays what it missed. */
@Injectable()
export class StreamsService {
  constructor(
    private readonly hub: StreamHub,
    private readonly events: DeviceEventQueries,
    private readonly access: DeviceAccess,
    private readonly relay: LiveRelay,
  ) {}

  /** Streams open on this instance now. */
  openStreams(): number {
    return this.hub.size;
  }

  /**
   * Registers the stream first and only then reads the replay, so an event committed in between is
   * held rather than lost; the replay and the held events are merged without duplicates. Before
   * that, the other instances hear that this one has streams, so telemetry they store once the
   * stream has opened reaches it.
   */
  async open(viewer: StreamViewer, request: StreamRequest, sink: StreamSink): Promise<void> {
    // A stream may narrow to a device the viewer sees by the sharing module's rule (own, shared, or any for an administrator).
    if (request.deviceId !== null && !(await this.access.grantOf(viewer, request.deviceId))) {
      throw new NotFoundError('No such device, or it is not yours.');
    }
    await this.relay.watching();
    const subscriber = this.hub.open(viewer, request.deviceId, sink, request.resumeAfter !== null);
    // After registering, so a share that changes meanwhile is announced to a stream that exists.
    if (!viewer.isAdmin) await Promise.all([this.relay.loadShares(viewer.userId), this.relay.loadOrganizations(viewer.userId)]);
    if (request.resumeAfter === null) return;
    try {
      const missed = await this.events.since(viewer, request.deviceId, request.resumeAfter, MAX_REPLAYED_EVENTS);
      subscriber.resume(missed.map((event) => ({ frame: eventFrame(event), eventId: event.id })));
    } catch (error) {
      subscriber.destroy();
      throw error;
    }
  }
}
