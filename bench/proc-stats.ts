import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every usual Linux). */
const TICKS_PER_SEC = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  ppid: number;
  /** utime + stime of the process itself, in µs. */
  ownUs: number;
  /** cutime + cstime: children it has waited for (exited backends), in µs. */
  reapedChildrenUs: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces, so split after the last ")".
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const tick = (index: number) => (Number(fields[index]) * 1_000_000) / TICKS_PER_SEC;
    // fields[0] is field 3 (state): utime is field 14 → index 11, stime 12, cutime 13, cstime 14.
    return { ppid: Number(fields[1]), ownUs: tick(11) + tick(12), reapedChildrenUs: tick(13) + tick(14) };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) one process has used so far, in µs. */
export function processCpuUs(pid: number): number {
  return readStat(pid)?.ownUs ?? 0;
}

/**
 * CPU time of a whole PostgreSQL server so far, in µs: the postmaster, every live child (backends,
 * checkpointer, WAL writer, autovacuum, parallel workers) and the children that already exited,
 * which the kernel adds to the postmaster's cutime/cstime when it reaps them.
 */
export function postgresCpuUs(postmasterPid: number): number {
  const postmaster = readStat(postmasterPid);
  if (!postmaster) return 0;
  let total = postmaster.ownUs + postmaster.reapedChildrenUs;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat?.ppid === postmasterPid) total += stat.ownUs;
  }
  return total;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

export const rssKb = (pid: number) => statusKb(pid, 'VmRSS');
export const peakRssKb = (pid: number) => statusKb(pid, 'VmHWM');

/** Resets the process's peak RSS (VmHWM) so the next reading covers one run only; false if not allowed. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** CPU time the whole machine spent busy so far (every CPU, user + system + irq + steal), in µs. */
export function machineBusyUs(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    const busyTicks = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + (fields[7] ?? 0);
    return (busyTicks * 1_000_000) / TICKS_PER_SEC;
  } catch {
    return 0;
  }
}

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memGiB: number;
  kernel: string;
  node: string;
}

export function machineInfo(): MachineInfo {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpuModel;
  } catch {
    // not Linux: keep what os.cpus() said
  }
  return { cpus: cpus().length, cpuModel, memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10, kernel: release(), node: process.version };
}
