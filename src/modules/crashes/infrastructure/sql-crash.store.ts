import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { DEVICE_OWNERS, DEVICE_SUMMARIES } from '../../devices/sql-api.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { CrashStore, type CrashPage } from '../domain/crash.store.js';
import { CRASH_REASONS, isCrash, signatureText, SIGNATURE_FRAMES, type CrashGroup, type CrashReport, type Panic, type ResetReason, type StoredCrash } from '../domain/crash-report.js';

/** A group's id: 64 bits of SHA-256 of its signature text, in hexadecimal. */
export const groupIdOf = (report: Pick<CrashReport, 'resetReason' | 'panic'>): string => createHash('sha256').update(signatureText(report)).digest('hex').slice(0, 16);

interface CrashRow {
  device_id: string;
  crash_id: string;
  ts: Date;
  firmware_version: string;
  reset_reason: ResetReason;
  uptime_sec: string;
  panic: Panic | null;
  signature: string;
  received_at: Date;
  hardware_id: string | null;
}

interface GroupRow {
  group_id: string;
  reset_reason: ResetReason;
  backtrace: string[] | null;
  devices: number;
  crashes: number;
  first_seen: Date;
  last_seen: Date;
  firmware_versions: string[];
  latest_version: string;
  latest_hardware: string | null;
}

const CRASH_COLUMNS = 'device_id, crash_id, ts, firmware_version, reset_reason, uptime_sec, panic, signature, received_at';
/** The device's hardware, through the devices module's view. */
const HARDWARE = `(SELECT d.hardware_id FROM ${DEVICE_SUMMARIES} d WHERE d.device_id = c.device_id)`;
const READ_COLUMNS = `${CRASH_COLUMNS.split(', ').map((column) => `c.${column}`).join(', ')}, ${HARDWARE} AS hardware_id`;

const toCrash = (row: CrashRow): StoredCrash => ({
  deviceId: row.device_id,
  crashId: row.crash_id,
  ts: row.ts,
  firmwareVersion: row.firmware_version,
  resetReason: row.reset_reason,
  uptimeSec: Number(row.uptime_sec),
  panic: row.panic,
  groupId: row.signature,
  receivedAt: row.received_at,
  hardwareId: row.hardware_id,
});

const byVersion = (a: string, b: string): number => FirmwareVersion.parse(a).compareTo(FirmwareVersion.parse(b));

const toGroup = (row: GroupRow): CrashGroup => ({
  groupId: row.group_id,
  resetReason: row.reset_reason,
  topFrames: (row.backtrace ?? []).slice(0, SIGNATURE_FRAMES).map((address) => address.toLowerCase()),
  latest: { firmwareVersion: row.latest_version, hardwareId: row.latest_hardware },
  crash: isCrash(row.reset_reason),
  devices: row.devices,
  crashes: row.crashes,
  firstSeen: row.first_seen,
  lastSeen: row.last_seen,
  firmwareVersions: [...row.firmware_versions].sort(byVersion),
});

/** Groups are aggregated from the reports by signature; `backtrace` is the latest report's. */
const GROUPS = `
  SELECT signature AS group_id, min(reset_reason) AS reset_reason,
         (array_agg(panic->'backtrace' ORDER BY received_at DESC))[1] AS backtrace,
         count(DISTINCT device_id)::int AS devices, count(*)::int AS crashes,
         min(received_at) AS first_seen, max(received_at) AS last_seen,
         array_agg(DISTINCT firmware_version) AS firmware_versions,
         (array_agg(firmware_version ORDER BY received_at DESC))[1] AS latest_version,
         (array_agg(${HARDWARE} ORDER BY received_at DESC))[1] AS latest_hardware
    FROM device_crashes c`;

@Injectable()
export class SqlCrashStore extends CrashStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  store(
    deviceId: string,
    report: CrashReport,
    receivedAt: Date,
    onCreated: (tx: SqlRunner, stored: { groupId: string; ownerId: string | null }) => Promise<void>,
  ): Promise<{ groupId: string; created: boolean }> {
    const groupId = groupIdOf(report);
    return this.sql.transaction(async (tx) => {
      const [inserted] = await tx.rows<{ owner_id: string | null }>(
        `INSERT INTO device_crashes AS c (${CRASH_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (device_id, crash_id) DO NOTHING
         RETURNING (SELECT o.owner_id FROM ${DEVICE_OWNERS} o WHERE o.device_id = c.device_id) AS owner_id`,
        [deviceId, report.crashId, report.ts, report.firmwareVersion, report.resetReason, report.uptimeSec, report.panic === null ? null : JSON.stringify(report.panic), groupId, receivedAt],
        'crash-insert',
      );
      if (inserted) {
        await onCreated(tx, { groupId, ownerId: inserted.owner_id });
        return { groupId, created: true };
      }
      // A retry: the first report of this crash id stands, and so does its group.
      const [stored] = await tx.rows<{ signature: string }>('SELECT signature FROM device_crashes WHERE device_id = $1 AND crash_id = $2', [deviceId, report.crashId], 'crash-signature');
      return { groupId: stored.signature, created: false };
    });
  }

  async crashesReceivedAfter(deviceId: string, since: Date): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(
      'SELECT count(*)::int AS n FROM device_crashes WHERE device_id = $1 AND received_at > $2 AND reset_reason = ANY($3::text[])',
      [deviceId, since, CRASH_REASONS],
      'crash-count-since',
    );
    return row.n;
  }

  async ofDevice(deviceId: string, page: CrashPage): Promise<StoredCrash[]> {
    const rows = await this.sql.rows<CrashRow>(
      `SELECT ${READ_COLUMNS} FROM device_crashes c
        WHERE device_id = $1 AND ($2::timestamptz IS NULL OR received_at >= $2)
          AND ($3::timestamptz IS NULL OR (ts, crash_id) < ($3, $4::varchar))
        ORDER BY ts DESC, crash_id DESC LIMIT $5`,
      [deviceId, page.since, page.before?.ts ?? null, page.before?.crashId ?? null, page.limit],
      'crash-of-device',
    );
    return rows.map(toCrash);
  }

  async groups(offset: number, limit: number): Promise<CrashGroup[]> {
    const rows = await this.sql.rows<GroupRow>(`${GROUPS} GROUP BY signature ORDER BY devices DESC, crashes DESC, last_seen DESC, signature OFFSET $1 LIMIT $2`, [offset, limit], 'crash-groups');
    return rows.map(toGroup);
  }

  async group(groupId: string): Promise<CrashGroup | null> {
    const [row] = await this.sql.rows<GroupRow>(`${GROUPS} WHERE signature = $1 GROUP BY signature`, [groupId], 'crash-group');
    return row ? toGroup(row) : null;
  }

  async samples(groupId: string, limit: number): Promise<StoredCrash[]> {
    const rows = await this.sql.rows<CrashRow>(`SELECT ${READ_COLUMNS} FROM device_crashes c WHERE signature = $1 ORDER BY received_at DESC, device_id, crash_id LIMIT $2`, [groupId, limit], 'crash-samples');
    return rows.map(toCrash);
  }
}
