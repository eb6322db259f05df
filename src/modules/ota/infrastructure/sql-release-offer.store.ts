import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { Sql } from '../../../shared/database/sql.js';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import type { FirmwareRelease, SignedManifest } from '../domain/firmware-release.js';
import type { HeldBackReason } from '../domain/battery-guard.js';
import { ReleaseOfferStore } from '../domain/release-offer.store.js';

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
  min_crash_free_percent: number | null;
  paused: boolean;
  auto_paused_at: Date | null;
  revoked: boolean;
  published_at: Date;
  updated_at: Date;
  signing_key_id: string | null;
  signature: Buffer | null;
  manifest: string | null;
  target_tags: string[] | null;
  target_device_ids: string[] | null;
  starts_at: Date | null;
  rollback_to: string | null;
}

/** The signature columns as the domain holds them; null for an unsigned release. */
export const signedOf = (row: { signing_key_id: string | null; signature: Buffer | null; manifest: string | null }): SignedManifest | null =>
  row.signing_key_id !== null && row.signature !== null && row.manifest !== null ? { keyId: row.signing_key_id, signature: row.signature.toString('base64'), manifest: row.manifest } : null;

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
  minCrashFreePercent: row.min_crash_free_percent,
  paused: row.paused,
  autoPausedAt: row.auto_paused_at,
  revoked: row.revoked,
  // Those awaiting their image are not read; a revoked one with a way back is (selectRelease).
  awaitingImage: false,
  publishedAt: row.published_at,
  updatedAt: row.updated_at,
  signed: signedOf(row),
  targetTags: row.target_tags,
  targetDeviceIds: row.target_device_ids,
  startsAt: row.starts_at,
  rollbackTo: row.rollback_to,
});

/**
 * The OTA poll's reads and writes, in named SQL: a hot path, measured in S4 (bench/README.md; the
 * query builder cost 40 % of throughput on the hot paths). The offerable releases are mirrored in
 * memory, so an unchanged poll costs no query at all.
 */
@Injectable()
export class SqlReleaseOfferStore extends ReleaseOfferStore {
  private readonly offerable: Mirror<FirmwareRelease[]>;

  constructor(
    private readonly sql: Sql,
    feed: ChangeFeed,
  ) {
    super();
    this.offerable = new Mirror(feed, 'firmware_releases', async () =>
      (
        await this.sql.rows<ReleaseRow>(
          'SELECT id, version, hardware_id, channel, url, sha256, size, release_notes, rollout_percent, min_from_version, max_failure_percent, min_crash_free_percent, paused, auto_paused_at, revoked, published_at, updated_at, signing_key_id, signature, manifest, target_tags, target_device_ids, starts_at, rollback_to FROM firmware_releases WHERE (NOT revoked AND NOT paused AND NOT awaiting_image) OR rollback_to IS NOT NULL',
          [],
          'releases_offerable',
        )
      ).map(toRelease),
    );
  }

  offerableReleases(): Promise<FirmwareRelease[]> {
    return this.offerable.get();
  }

  async recordOffer(deviceId: string, releaseId: string, now: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO device_release_states AS s (device_id, release_id, state, offered_at, last_event_at) VALUES ($1, $2, 'offered', $3, NULL)
       ON CONFLICT (release_id, device_id) DO UPDATE SET offered_at = COALESCE(s.offered_at, EXCLUDED.offered_at),
         state = CASE WHEN s.state = 'held_back' THEN 'offered' ELSE s.state END, held_back_reason = NULL, held_back_at = NULL`,
      [deviceId, releaseId, now],
      'release_offer',
    );
  }

  async recordHeldBack(deviceId: string, releaseId: string, reason: HeldBackReason, now: Date): Promise<void> {
    await this.sql.rows(
      `INSERT INTO device_release_states AS s (device_id, release_id, state, held_back_reason, held_back_at) VALUES ($1, $2, 'held_back', $3, $4)
       ON CONFLICT (release_id, device_id) DO UPDATE SET held_back_reason = EXCLUDED.held_back_reason, held_back_at = EXCLUDED.held_back_at`,
      [deviceId, releaseId, reason, now],
      'release_held_back',
    );
  }
}
