import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { Sql } from '../../../shared/database/sql.js';
import type { OtaChannel } from '../../devices/domain/device-config.js';
import type { FirmwareRelease } from '../domain/firmware-release.js';

interface ReleaseRow {
  id: string;
  version: string;
  hardware_id: string | null;
  channel: OtaChannel;
  url: string;
  sha256: string;
  size: string;
  release_notes: string | null;
  rollout_percent: number;
  min_from_version: string | null;
  max_failure_percent: number | null;
  paused: boolean;
  auto_paused_at: Date | null;
  revoked: boolean;
  published_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'id, version, hardware_id, channel, url, sha256, size, release_notes, rollout_percent, min_from_version, max_failure_percent, paused, auto_paused_at, revoked, published_at, updated_at';

const toRelease = (row: ReleaseRow): FirmwareRelease => ({
  id: row.id,
  version: row.version,
  hardwareId: row.hardware_id,
  channel: row.channel,
  url: row.url,
  sha256: row.sha256,
  size: Number(row.size),
  releaseNotes: row.release_notes,
  rolloutPercent: row.rollout_percent,
  minFromVersion: row.min_from_version,
  maxFailurePercent: row.max_failure_percent,
  paused: row.paused,
  autoPausedAt: row.auto_paused_at,
  revoked: row.revoked,
  publishedAt: row.published_at,
  updatedAt: row.updated_at,
});

export interface ReleaseFilter {
  channel?: OtaChannel;
  hardwareId?: string;
  version?: string;
  includeRevoked: boolean;
  limit: number;
  after?: { publishedAt: Date; id: string };
}

export interface ReleaseCounts {
  offered: number;
  downloading: number;
  installing: number;
  installed: number;
  failed: number;
  rolledBack: number;
  stalled: number;
}

/** Firmware releases; the ones a device could still be offered are mirrored in memory for /ota/latest. */
@Injectable()
export class SqlFirmwareReleases {
  private readonly offerable: Mirror<FirmwareRelease[]>;

  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    this.offerable = new Mirror(feed, 'firmware_releases', async () =>
      (await this.sql.rows<ReleaseRow>(`SELECT ${COLUMNS} FROM firmware_releases WHERE NOT revoked AND NOT paused`, [], 'releases_offerable')).map(toRelease),
    );
  }

  /** Not revoked, not paused: from memory while no release changed. */
  offerableReleases(): Promise<FirmwareRelease[]> {
    return this.offerable.get();
  }

  /** False when (version, hardwareId, channel) exists already. */
  async insert(release: FirmwareRelease): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO firmware_releases (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       ON CONFLICT DO NOTHING RETURNING id`,
      [
        release.id,
        release.version,
        release.hardwareId,
        release.channel,
        release.url,
        release.sha256,
        release.size,
        release.releaseNotes,
        release.rolloutPercent,
        release.minFromVersion,
        release.maxFailurePercent,
        release.paused,
        release.autoPausedAt,
        release.revoked,
        release.publishedAt,
        release.updatedAt,
      ],
    );
    this.feed.changed('firmware_releases');
    return rows.length === 1;
  }

  /** Releases an event's toVersion may refer to: that version (numerically), for this hardware or any. */
  async forVersions(versions: string[], hardwareId: string): Promise<FirmwareRelease[]> {
    if (versions.length === 0) return [];
    const rows = await this.sql.rows<ReleaseRow>(
      `SELECT ${COLUMNS} FROM firmware_releases
        WHERE firmware_version_key(version) = ANY (SELECT firmware_version_key(v) FROM unnest($1::text[]) AS v)
          AND (hardware_id IS NULL OR hardware_id = $2)`,
      [versions, hardwareId],
    );
    return rows.map(toRelease);
  }

  async findById(id: string): Promise<FirmwareRelease | null> {
    const rows = await this.sql.rows<ReleaseRow>(`SELECT ${COLUMNS} FROM firmware_releases WHERE id = $1`, [id]);
    return rows[0] ? toRelease(rows[0]) : null;
  }

  /** Newest first, keyset-paginated on (publishedAt, id). */
  async list(filter: ReleaseFilter): Promise<FirmwareRelease[]> {
    const rows = await this.sql.rows<ReleaseRow>(
      `SELECT ${COLUMNS} FROM firmware_releases
        WHERE ($1::text IS NULL OR channel = $1)
          AND ($2::text IS NULL OR hardware_id = $2)
          AND ($3::text IS NULL OR firmware_version_key(version) = firmware_version_key($3))
          AND ($4::boolean OR NOT revoked)
          AND ($5::timestamptz IS NULL OR (published_at, id) < ($5, $6::uuid))
        ORDER BY published_at DESC, id DESC
        LIMIT $7`,
      [filter.channel ?? null, filter.hardwareId ?? null, filter.version ?? null, filter.includeRevoked, filter.after?.publishedAt ?? null, filter.after?.id ?? null, filter.limit],
    );
    return rows.map(toRelease);
  }

  /** Applies the change under a row lock; null when the release does not exist. */
  async update(id: string, change: (release: FirmwareRelease) => FirmwareRelease): Promise<FirmwareRelease | null> {
    const updated = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<ReleaseRow>(`SELECT ${COLUMNS} FROM firmware_releases WHERE id = $1 FOR UPDATE`, [id]);
      if (!row) return null;
      const next = change(toRelease(row));
      const [stored] = await tx.rows<ReleaseRow>(
        `UPDATE firmware_releases SET rollout_percent = $2, paused = $3, auto_paused_at = $4, revoked = $5, updated_at = $6,
                failure_budget_since = CASE WHEN $7::boolean THEN $6 ELSE failure_budget_since END
          WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, next.rolloutPercent, next.paused, next.autoPausedAt, next.revoked, next.updatedAt, row.auto_paused_at !== null && next.autoPausedAt === null],
      );
      return toRelease(stored);
    });
    this.feed.changed('firmware_releases');
    return updated;
  }

  /** Pauses the release because of failures, unless it is paused already; true when this call paused it. */
  async autoPause(id: string, now: Date): Promise<boolean> {
    const rows = await this.sql.rows('UPDATE firmware_releases SET paused = true, auto_paused_at = $2, updated_at = $2 WHERE id = $1 AND NOT paused RETURNING id', [id, now]);
    if (rows.length > 0) this.feed.changed('firmware_releases');
    return rows.length > 0;
  }

  /**
   * Where the devices stand with the release. A device that installed it but now runs an older
   * version (it registered or reported one) counts as rolled back; one that started a download or
   * install and was silent since `stalledBefore` counts as stalled.
   */
  async counts(id: string, stalledBefore: Date, onlySinceBudgetStart = false): Promise<ReleaseCounts> {
    const [row] = await this.sql.rows<Record<keyof ReleaseCounts, string>>(
      `SELECT count(*) FILTER (WHERE s.offered_at IS NOT NULL) AS "offered",
              count(*) FILTER (WHERE s.state = 'downloading' AND s.last_event_at >= $2) AS "downloading",
              count(*) FILTER (WHERE s.state = 'installing' AND s.last_event_at >= $2) AS "installing",
              count(*) FILTER (WHERE s.state IN ('downloading', 'installing') AND s.last_event_at < $2) AS "stalled",
              count(*) FILTER (WHERE s.state = 'installed' AND firmware_version_key(d.firmware_version) >= firmware_version_key(r.version)) AS "installed",
              count(*) FILTER (WHERE s.state = 'failed') AS "failed",
              count(*) FILTER (WHERE s.state = 'rolled_back'
                                  OR (s.state = 'installed' AND firmware_version_key(d.firmware_version) < firmware_version_key(r.version))) AS "rolledBack"
         FROM device_release_states s
         JOIN devices d ON d.device_id = s.device_id
         JOIN firmware_releases r ON r.id = s.release_id
        WHERE s.release_id = $1
          AND (NOT $3::boolean OR r.failure_budget_since IS NULL OR s.last_event_at >= r.failure_budget_since)`,
      [id, stalledBefore, onlySinceBudgetStart],
    );
    return {
      offered: Number(row.offered),
      downloading: Number(row.downloading),
      installing: Number(row.installing),
      installed: Number(row.installed),
      failed: Number(row.failed),
      rolledBack: Number(row.rolledBack),
      stalled: Number(row.stalled),
    };
  }

  /** Releases that may pause themselves: live, with a failure budget. */
  async watchedReleases(): Promise<FirmwareRelease[]> {
    const rows = await this.sql.rows<ReleaseRow>(`SELECT ${COLUMNS} FROM firmware_releases WHERE max_failure_percent IS NOT NULL AND NOT paused AND NOT revoked`);
    return rows.map(toRelease);
  }

  /** Remembers that the device was offered the release (first time only). */
  async recordOffer(deviceId: string, releaseId: string, now: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO device_release_states (device_id, release_id, state, offered_at, last_event_at) VALUES ($1, $2, 'offered', $3, NULL)
       ON CONFLICT (release_id, device_id) DO UPDATE SET offered_at = COALESCE(device_release_states.offered_at, EXCLUDED.offered_at)`,
      [deviceId, releaseId, now],
      'release_offer',
    );
  }
}
