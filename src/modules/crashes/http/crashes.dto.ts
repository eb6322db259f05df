import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { JsonSchemaBody } from '../../../shared/http/json-schema-body.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { ReadCrash, ReadCrashGroup } from '../application/crashes.service.js';
import { ADDRESS, CRASH_ID, MAX_BACKTRACE_FRAMES, RESET_REASONS, type ResetReason } from '../domain/crash-report.js';

/** What the report route accepts, as the schema below has checked it. */
export interface CrashReportBody {
  crashId: string;
  ts: string;
  firmwareVersion: string;
  resetReason: ResetReason;
  uptimeSec: number;
  panic?: { task?: string; excCause?: string; pc?: string; backtrace: string[] };
}

/** A backtrace longer than 64 frames is refused (400), not cut: a truncated report would group wrongly. */
export const crashReportPipe = new JsonSchemaBody({
  type: 'object',
  additionalProperties: false,
  required: ['crashId', 'ts', 'firmwareVersion', 'resetReason', 'uptimeSec'],
  properties: {
    crashId: { type: 'string', pattern: CRASH_ID.source },
    ts: { type: 'string', maxLength: 40, format: 'iso-instant' },
    firmwareVersion: { type: 'string', maxLength: 40, pattern: FirmwareVersion.PATTERN.source },
    resetReason: { enum: [...RESET_REASONS] },
    uptimeSec: { type: 'integer', minimum: 0, maximum: 100 * 365 * 86_400 },
    panic: {
      type: 'object',
      additionalProperties: false,
      required: ['backtrace'],
      properties: {
        task: { type: 'string', minLength: 1, maxLength: 32 },
        excCause: { type: 'string', minLength: 1, maxLength: 64 },
        pc: { type: 'string', pattern: ADDRESS.source },
        backtrace: { type: 'array', maxItems: MAX_BACKTRACE_FRAMES, items: { type: 'string', pattern: ADDRESS.source } },
      },
    },
  },
});

export class PanicRequest {
  @ApiPropertyOptional({ maxLength: 32, example: 'bms_poll', description: 'The FreeRTOS task that panicked.' })
  task?: string;

  @ApiPropertyOptional({ maxLength: 64, example: 'LoadProhibited', description: 'The exception cause as ESP-IDF names it.' })
  excCause?: string;

  @ApiPropertyOptional({ pattern: ADDRESS.source, example: '0x400d2f1c' })
  pc?: string;

  @ApiProperty({ type: [String], maxItems: MAX_BACKTRACE_FRAMES, example: ['0x400d2f1c', '0x400d3a08', '0x4008b2d1'], description: `Return addresses, innermost first; at most ${MAX_BACKTRACE_FRAMES} (more is a 400, not a cut).` })
  backtrace!: string[];
}

export class CrashReportRequest {
  @ApiProperty({ pattern: CRASH_ID.source, example: 'boot-1042', description: 'Chosen by the gateway, unique for it: the report is stored once per crash id, however often it is sent.' })
  crashId!: string;

  @ApiProperty({ format: 'date-time', maxLength: 40, example: '2026-11-21T12:00:00Z', description: 'When it crashed (gateway clock).' })
  ts!: string;

  @ApiProperty({ example: '1.4.2', pattern: FirmwareVersion.PATTERN.source, description: 'The firmware that crashed.' })
  firmwareVersion!: string;

  @ApiProperty({ enum: RESET_REASONS, description: 'ESP-IDF\'s esp_reset_reason_t after the restart (ESP_RST_PANIC → panic). panic, int_wdt, task_wdt, wdt and cpu_lockup are crashes; the others are reboot reasons.' })
  resetReason!: ResetReason;

  @ApiProperty({ type: 'integer', minimum: 0, example: 86_400, description: 'How long it had run before the reset.' })
  uptimeSec!: number;

  @ApiPropertyOptional({ type: PanicRequest })
  panic?: PanicRequest;
}

export class CrashReportResponse {
  @ApiProperty({ example: 'boot-1042' })
  crashId!: string;

  @ApiProperty({ example: '9f2c1e4b6a4e0f8a', description: 'The crash group (reset reason and top frames).' })
  groupId!: string;
}

export class NamedFrameResponse {
  @ApiProperty({ example: '0x400d2f1c' })
  address!: string;

  @ApiProperty({ type: 'string', nullable: true, example: 'bms_poll_task', description: 'The function, from the symbol map of the release (PUT /admin/firmware/{id}/symbols); null without one.' })
  function!: string | null;
}

export class CrashResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;
  @ApiProperty({ example: 'boot-1042' })
  crashId!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;
  @ApiProperty({ example: '1.4.2' })
  firmwareVersion!: string;
  @ApiProperty({ enum: RESET_REASONS })
  resetReason!: ResetReason;
  @ApiProperty({ type: 'integer', example: 86_400 })
  uptimeSec!: number;
  @ApiProperty({ type: PanicRequest, nullable: true, example: { task: 'bms_poll', excCause: 'LoadProhibited', pc: '0x400d2f1c', backtrace: ['0x400d2f1c', '0x400d3a08'] } })
  panic!: PanicRequest | null;
  @ApiProperty({ type: [NamedFrameResponse], description: 'The backtrace, each frame named where the release has a symbol map.' })
  frames!: NamedFrameResponse[];
  @ApiProperty({ example: '9f2c1e4b6a4e0f8a' })
  groupId!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:05.000Z' })
  receivedAt!: string;

  static from(crash: ReadCrash): CrashResponse {
    return {
      deviceId: crash.deviceId,
      crashId: crash.crashId,
      ts: crash.ts.toISOString(),
      firmwareVersion: crash.firmwareVersion,
      resetReason: crash.resetReason,
      uptimeSec: crash.uptimeSec,
      panic: crash.panic === null ? null : { ...(crash.panic.task ? { task: crash.panic.task } : {}), ...(crash.panic.excCause ? { excCause: crash.panic.excCause } : {}), ...(crash.panic.pc ? { pc: crash.panic.pc } : {}), backtrace: crash.panic.backtrace },
      frames: crash.frames,
      groupId: crash.groupId,
      receivedAt: crash.receivedAt.toISOString(),
    };
  }
}

export class CrashesResponse {
  @ApiProperty({ type: [CrashResponse] })
  items!: CrashResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}

export class CrashesQuery extends PageQuery(200) {}

export class CrashGroupsQuery extends PageQuery(100) {}

export class CrashGroupResponse {
  @ApiProperty({ example: '9f2c1e4b6a4e0f8a' })
  groupId!: string;
  @ApiProperty({ enum: RESET_REASONS })
  resetReason!: ResetReason;
  @ApiProperty({ type: [String], example: ['0x400d2f1c', '0x400d3a08'], description: 'The top frames of the backtrace (lower-case): with the reset reason, what the group is.' })
  topFrames!: string[];
  @ApiProperty({ type: 'array', items: { type: 'string', nullable: true }, example: ['bms_poll_task', null], description: 'The functions of topFrames, by the symbol map of the latest report\'s release; null where none names one.' })
  topFunctions!: Array<string | null>;
  @ApiProperty({ example: true, description: 'Whether the reset reason is a crash (panic, watchdogs, CPU lockup) rather than a reboot reason.' })
  crash!: boolean;
  @ApiProperty({ type: 'integer', example: 12, description: 'Devices that reported it.' })
  devices!: number;
  @ApiProperty({ type: 'integer', example: 31, description: 'Reports.' })
  crashes!: number;
  @ApiProperty({ format: 'date-time', example: '2026-11-20T08:00:00.000Z', description: 'When the service received its first report.' })
  firstSeen!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:05.000Z' })
  lastSeen!: string;
  @ApiProperty({ type: [String], example: ['1.4.2', '1.4.10'], description: 'Firmware versions that reported it, in version order.' })
  firmwareVersions!: string[];

  static from(group: ReadCrashGroup): CrashGroupResponse {
    return {
      groupId: group.groupId,
      resetReason: group.resetReason,
      topFrames: group.topFrames,
      topFunctions: group.topFunctions,
      crash: group.crash,
      devices: group.devices,
      crashes: group.crashes,
      firstSeen: group.firstSeen.toISOString(),
      lastSeen: group.lastSeen.toISOString(),
      firmwareVersions: group.firmwareVersions,
    };
  }
}

export class CrashGroupsResponse {
  @ApiProperty({ type: [CrashGroupResponse], description: 'Most devices affected first.' })
  items!: CrashGroupResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null })
  nextCursor!: string | null;
}

export class CrashGroupDetailResponse extends CrashGroupResponse {
  @ApiProperty({ type: [CrashResponse], description: 'Its latest reports (at most 20).' })
  samples!: CrashResponse[];
}
