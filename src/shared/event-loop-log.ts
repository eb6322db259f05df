import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Logger } from 'pino';

const RESOLUTION_MS = 10;

/**
 * Every `everyMs`, one line `event loop` with the event-loop delay (ms) since the last line: the
 * benchmark's soak reads it from the service's output (EVENT_LOOP_LOG_MS), written by `logger`.
 */
export function logEventLoopDelay(everyMs: number, logger: Logger): void {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  // The histogram holds the time between the monitor's ticks: the delay is what exceeds the resolution.
  const delayMs = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 100) / 100);
  const started = performance.now();
  let windows = 0;
  // Windows on a fixed grid from the start, unlike setInterval, which drifts by each late tick.
  const scheduleNext = () => {
    windows += 1;
    setTimeout(() => {
      logger.info({ p50: delayMs(histogram.percentile(50)), p99: delayMs(histogram.percentile(99)), max: delayMs(histogram.max) }, 'event loop');
      histogram.reset();
      scheduleNext();
    }, started + windows * everyMs - performance.now()).unref();
  };
  scheduleNext();
}
