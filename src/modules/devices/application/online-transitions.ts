import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { EventDispatch } from '../../events/index.js';
import { TelemetryFeed } from '../../telemetry/index.js';

/**
 * device.online: the ingest statement clears offline_since when telemetry of a device the offline
 * check marked offline arrives, and records the event in that same statement; this hands the event
 * to its channels once the flush committed. Exactly one flush finds the device offline, so there is
 * one event per return. (A crash between the commit and this leaves the event in the log,
 * undelivered to webhooks and e-mail: the statement cannot enqueue a job itself.)
 */
@Injectable()
export class OnlineTransitions implements OnModuleInit {
  private readonly logger = new Logger(OnlineTransitions.name);

  constructor(
    private readonly feed: TelemetryFeed,
    private readonly dispatch: EventDispatch,
  ) {}

  onModuleInit(): void {
    this.feed.subscribe((stored) => {
      for (const entry of stored) {
        if (entry.onlineEventId === null) continue;
        this.dispatch.later(entry.onlineEventId).catch((error: unknown) => {
          this.logger.warn({ code: (error as { code?: unknown }).code, deviceId: entry.deviceId }, 'device.online recorded but not dispatched');
        });
      }
    });
  }
}
