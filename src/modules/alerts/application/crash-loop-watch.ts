import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { jobIdFor } from '../../../shared/jobs/job-id.js';
import { JobQueue, type QueueSpec } from '../../../shared/jobs/job-queue.js';
import { CrashesService } from '../../crashes/index.js';
import { EventDispatch, type DispatchedEvent, type EventChannel } from '../../events/index.js';
import { isCrashRule, type AlertRule } from '../domain/alert-rule.js';
import { AlertStore } from '../domain/alert.store.js';
import { AlertRules } from './alert-rules.service.js';
import { AlertTransitions } from './alert-transitions.js';

export const CRASH_WINDOW_QUEUE = 'alerts.crash-window';

/** A device whose crash rules are judged again: the window has passed over one of its crashes. */
export interface CrashWindowJob {
  deviceId: string;
}

const QUEUE: QueueSpec = { name: CRASH_WINDOW_QUEUE, retry: { delaySec: 10, delayMaxSec: 300, limit: 20 }, expireInSec: 60 };

/**
 * Rules on the metric `crashes` (a crash loop): the value is the number of crash reports the device
 * sent in the rule's window, judged by the service's clock, through the same evaluator and alert
 * transitions as telemetry rules. It is judged when a crash arrives (the event `device.crashed`,
 * from the durable event dispatch, so on whichever instance takes it) and again, from the job queue,
 * once the window has passed over that crash: the count falls and the alert resolves by itself when
 * the device has stopped crashing. Judging twice at one instant changes nothing (the watermark), so
 * a dispatch or job that runs again is harmless.
 */
@Injectable()
export class CrashLoopWatch implements EventChannel, OnModuleInit {
  constructor(
    private readonly dispatch: EventDispatch,
    private readonly jobs: JobQueue,
    private readonly rules: AlertRules,
    private readonly store: AlertStore,
    private readonly transitions: AlertTransitions,
    private readonly crashes: CrashesService,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.dispatch.register(this);
    this.jobs.define<CrashWindowJob>(QUEUE, async ({ deviceId }) => {
      await this.judge(deviceId);
    });
  }

  async fanOut(event: DispatchedEvent): Promise<void> {
    if (event.type !== 'device.crashed') return;
    const rules = await this.judge(event.deviceId);
    for (const rule of rules) {
      const windowSec = rule.windowSec as number;
      await this.jobs.send<CrashWindowJob>(CRASH_WINDOW_QUEUE, { deviceId: event.deviceId }, { id: jobIdFor('crash-window', event.id, rule.ruleId, String(windowSec)), startAfterSec: windowSec + 1 });
    }
  }

  /** Judges the device's crash rules now, under its alert lock; answers the enabled ones. */
  judge(deviceId: string): Promise<AlertRule[]> {
    return this.store.forDevices([deviceId], async (unit) => {
      const now = this.clock.now();
      const rules = ((await this.rules.rulesFor([deviceId])).get(deviceId) ?? []).filter(isCrashRule);
      const judged = await Promise.all(
        rules.map(async (rule) => {
          const since = new Date(now.getTime() - (rule.windowSec as number) * 1000);
          return { rule, value: { ts: now, value: await this.crashes.crashesReceivedAfter(deviceId, since) } };
        }),
      );
      await this.transitions.evaluateDeviceValues(unit, deviceId, judged);
      return rules.filter((rule) => rule.enabled);
    });
  }
}
