/** ESP-IDF's esp_reset_reason_t, lower-cased without the ESP_RST_ prefix. */
export const RESET_REASONS = ['unknown', 'poweron', 'ext', 'sw', 'panic', 'int_wdt', 'task_wdt', 'wdt', 'deepsleep', 'brownout', 'sdio', 'usb', 'jtag', 'efuse', 'pwr_glitch', 'cpu_lockup'] as const;
export type ResetReason = (typeof RESET_REASONS)[number];

/**
 * The reasons that mean the firmware failed: a panic, a watchdog, a locked-up CPU. The others are
 * reboot reasons (power on, a restart it asked for, deep sleep, a brownout of the supply): recorded
 * and grouped alike, but not crashes for crash loops and release health.
 */
export const CRASH_REASONS: readonly ResetReason[] = ['panic', 'int_wdt', 'task_wdt', 'wdt', 'cpu_lockup'];

export const MAX_BACKTRACE_FRAMES = 64;
/** Frames that make a group: deeper ones differ with the caller and would split one bug into many groups. */
export const SIGNATURE_FRAMES = 5;
/** A code address as ESP-IDF prints it (32-bit, hexadecimal). */
export const ADDRESS = /^0x[0-9a-fA-F]{1,8}$/;
export const CRASH_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export interface Panic {
  task: string | null;
  excCause: string | null;
  pc: string | null;
  backtrace: string[];
}

export interface CrashReport {
  crashId: string;
  ts: Date;
  firmwareVersion: string;
  resetReason: ResetReason;
  uptimeSec: number;
  panic: Panic | null;
}

export interface StoredCrash extends CrashReport {
  deviceId: string;
  /** The device's hardware now (symbol maps are per release, and releases per hardware); null when unknown. */
  hardwareId: string | null;
  groupId: string;
  receivedAt: Date;
}

export const isCrash = (reason: ResetReason): boolean => CRASH_REASONS.includes(reason);

/** What a group is: the reset reason and the top frames (lower-case addresses), as text to hash. */
export function signatureText(report: Pick<CrashReport, 'resetReason' | 'panic'>): string {
  const frames = (report.panic?.backtrace ?? []).slice(0, SIGNATURE_FRAMES).map((address) => address.toLowerCase());
  return [report.resetReason, ...frames].join('|');
}

/** A frame of a backtrace, named by the release's symbol map where there is one. */
export interface NamedFrame {
  address: string;
  function: string | null;
}

export interface CrashGroup {
  groupId: string;
  resetReason: ResetReason;
  topFrames: string[];
  /** The version and hardware of the latest report: whose symbol map names the top frames. */
  latest: { firmwareVersion: string; hardwareId: string | null };
  crash: boolean;
  devices: number;
  crashes: number;
  firstSeen: Date;
  lastSeen: Date;
  firmwareVersions: string[];
}
