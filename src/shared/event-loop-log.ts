import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

const RESOLUTION_MS = 10;

/**
 * Every `everyMs`, one JSON line on stdout with the event-loop delay (ms) since the last line: the
 * benchmark's soak reads it from the service's output (EVENT_LOOP_LOG_MS). Written past the logger,
 * so LOG_LEVEL does not hide it.
 */
export function logEventLoopDelay(everyMs: number): void {
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
      const line = { level: 'info', time: new Date().toISOString(), msg: 'event loop', p50: delayMs(histogram.percentile(50)), p99: delayMs(histogram.percentile(99)), max: delayMs(histogram.max) };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      histogram.reset();
      scheduleNext();
    }, started + windows * everyMs - performance.now()).unref();
  };
  scheduleNext();
}
