import type { SchedulerRegistry } from '@nestjs/schedule';

/**
 * Stops every periodic task (cron jobs, intervals, timeouts): none starts afterwards, those
 * running finish. Shutdown calls it as it begins, so no task fires while the database
 * connections close (it would fail and complain); the work they do is the database's, taken up
 * by the next run on any instance.
 */
export async function stopScheduledWork(scheduler: SchedulerRegistry): Promise<void> {
  for (const job of scheduler.getCronJobs().values()) await job.stop();
  for (const name of scheduler.getTimeouts()) scheduler.deleteTimeout(name);
  for (const name of scheduler.getIntervals()) scheduler.deleteInterval(name);
}
