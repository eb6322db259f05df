import { Injectable } from '@nestjs/common';
import { IsNull, Not } from 'typeorm';
import { DEVICE_CRASHED } from '../../crashes/sql-api.js';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { DEVICE_OWNERS, DEVICE_SUMMARIES } from '../../devices/sql-api.js';
import { Orm } from '../../../shared/database/orm.js';
import type { CrashFreeCounts, FirmwareRelease } from '../domain/firmware-release.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { FirmwareReleaseRepository, type ReleaseCounts, type ReleaseFilter, type RolloutDevice } from '../domain/firmware-release.repository.js';
import { DeviceReleaseStateRecord } from './device-release-state.record.js';
import { FirmwareReleaseRecord } from './firmware-release.record.js';
import { OtaEventRecord } from './ota-event.record.js';
import { signedOf } from './sql-release-offer.store.js';

function toRelease(record: FirmwareReleaseRecord): FirmwareRelease {
  return {
    id: record.id,
    version: record.version,
    hardwareId: record.hardwareId,
    channel: record.channel,
    url: record.url,
    sha256: record.sha256,
    size: Number(record.size),
    releaseNotes: record.releaseNotes,
    rolloutPercent: record.rolloutPercent,
    minFromVersion: record.minFromVersion,
    maxFailurePercent: record.maxFailurePercent,
    minCrashFreePercent: record.minCrashFreePercent,
    paused: record.paused,
    autoPausedAt: record.autoPausedAt,
    revoked: record.revoked,
    awaitingImage: record.awaitingImage,
    publishedAt: record.publishedAt,
    updatedAt: record.updatedAt,
    signed: signedOf({ signing_key_id: record.signingKeyId, signature: record.signature, manifest: record.manifest }),
    targetTags: record.targetTags,
    targetDeviceIds: record.targetDeviceIds,
    startsAt: record.startsAt,
    rollbackTo: record.rollbackTo,
  };
}

function toRecord(release: FirmwareRelease): FirmwareReleaseRecord {
  return Object.assign(new FirmwareReleaseRecord(), {
    id: release.id,
    version: release.version,
    hardwareId: release.hardwareId,
    channel: release.channel,
    url: release.url,
    sha256: release.sha256,
    size: String(release.size),
    releaseNotes: release.releaseNotes,
    rolloutPercent: release.rolloutPercent,
    minFromVersion: release.minFromVersion,
    maxFailurePercent: release.maxFailurePercent,
    minCrashFreePercent: release.minCrashFreePercent,
    paused: release.paused,
    autoPausedAt: release.autoPausedAt,
    failureBudgetSince: null,
    revoked: release.revoked,
    awaitingImage: release.awaitingImage,
    publishedAt: release.publishedAt,
    updatedAt: release.updatedAt,
    signingKeyId: release.signed?.keyId ?? null,
    signature: release.signed ? Buffer.from(release.signed.signature, 'base64') : null,
    manifest: release.signed?.manifest ?? null,
    targetTags: release.targetTags,
    targetDeviceIds: release.targetDeviceIds,
    startsAt: release.startsAt,
    rollbackTo: release.rollbackTo,
  });
}

/**
 * Firmware releases as administrators publish and steer them: a cold path, on TypeORM. What the
 * OTA poll reads per request is SqlReleaseOfferStore. Writers announce on the change feed, so the
 * poll's in-memory list of offerable releases forgets the old one here at once.
 */
@Injectable()
export class TypeOrmFirmwareReleaseRepository extends FirmwareReleaseRepository {
  constructor(
    private readonly orm: Orm,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  async insert(release: FirmwareRelease, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the identity index (numeric version, hardware, channel) decides atomically.
    const inserted = await this.orm.transaction(async (manager, tx) => {
      const result = await manager.createQueryBuilder().insert().into(FirmwareReleaseRecord).values(toRecord(release)).orIgnore().returning('id').updateEntity(false).execute();
      if ((result.raw as unknown[]).length !== 1) return false;
      await onInserted?.(tx);
      return true;
    });
    this.feed.changed('firmware_releases');
    return inserted;
  }

  async forVersions(versions: string[], hardwareId: string): Promise<FirmwareRelease[]> {
    if (versions.length === 0) return [];
    const records = await this.orm.run((manager) =>
      manager
        .createQueryBuilder(FirmwareReleaseRecord, 'r')
        .where('firmware_version_key(r.version) = ANY (SELECT firmware_version_key(v) FROM unnest(CAST(:versions AS text[])) AS v)', { versions })
        .andWhere('(r.hardwareId IS NULL OR r.hardwareId = :hardwareId)', { hardwareId })
        .getMany(),
    );
    return records.map(toRelease);
  }

  async findById(id: string): Promise<FirmwareRelease | null> {
    const record = await this.orm.run((manager) => manager.findOneBy(FirmwareReleaseRecord, { id }));
    return record ? toRelease(record) : null;
  }

  async list(filter: ReleaseFilter): Promise<FirmwareRelease[]> {
    const records = await this.orm.run((manager) => {
      const query = manager.createQueryBuilder(FirmwareReleaseRecord, 'r').orderBy('r.publishedAt', 'DESC').addOrderBy('r.id', 'DESC').limit(filter.limit);
      if (filter.channel !== undefined) query.andWhere('r.channel = :channel', { channel: filter.channel });
      if (filter.hardwareId !== undefined) query.andWhere('r.hardwareId = :hardwareId', { hardwareId: filter.hardwareId });
      if (filter.version !== undefined) query.andWhere('firmware_version_key(r.version) = firmware_version_key(:version)', { version: filter.version });
      if (!filter.includeRevoked) query.andWhere('NOT r.revoked');
      if (filter.after) query.andWhere('(r.publishedAt, r.id) < (:afterPublishedAt, CAST(:afterId AS uuid))', { afterPublishedAt: filter.after.publishedAt, afterId: filter.after.id });
      return query.getMany();
    });
    return records.map(toRelease);
  }

  async update(id: string, change: (release: FirmwareRelease) => FirmwareRelease, onUpdated?: (tx: SqlRunner, release: FirmwareRelease) => Promise<void>): Promise<FirmwareRelease | null> {
    const updated = await this.orm.transaction(async (tx, sql) => {
      const releases = tx.getRepository(FirmwareReleaseRecord);
      const record = await releases.findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!record) return null;
      const current = toRelease(record);
      const next = change(current);
      const stored = { rolloutPercent: next.rolloutPercent, paused: next.paused, autoPausedAt: next.autoPausedAt, revoked: next.revoked, rollbackTo: next.rollbackTo, updatedAt: next.updatedAt };
      const resumed = record.autoPausedAt !== null && next.autoPausedAt === null;
      await releases.update({ id }, resumed ? { ...stored, failureBudgetSince: next.updatedAt } : stored);
      await onUpdated?.(sql, { ...current, ...stored });
      return { ...current, ...stored };
    });
    this.feed.changed('firmware_releases');
    return updated;
  }

  async autoPause(id: string, now: Date, onPaused?: (tx: SqlRunner, devices: RolloutDevice[]) => Promise<void>): Promise<boolean> {
    const paused = await this.orm.transaction(async (manager, tx) => {
      const result = await manager.createQueryBuilder().update(FirmwareReleaseRecord).set({ paused: true, autoPausedAt: now, updatedAt: now }).where('id = :id', { id }).andWhere('NOT paused').execute();
      if ((result.affected ?? 0) === 0) return false;
      if (onPaused) {
        const devices = await manager
          .createQueryBuilder()
          .select('s.deviceId', 'deviceId')
          .addSelect('d.owner_id', 'ownerId')
          .from(DeviceReleaseStateRecord, 's')
          .innerJoin(DEVICE_OWNERS, 'd', 'd.device_id = s.deviceId')
          .where('s.releaseId = :id', { id })
          .orderBy('s.deviceId')
          .getRawMany<RolloutDevice>();
        await onPaused(tx, devices);
      }
      return true;
    });
    if (paused) this.feed.changed('firmware_releases');
    return paused;
  }

  async counts(id: string, stalledBefore: Date, onlySinceBudgetStart = false): Promise<ReleaseCounts> {
    const row = await this.orm.run((manager) => {
      const query = manager
        .createQueryBuilder()
        .select('count(*) FILTER (WHERE s.offeredAt IS NOT NULL)', 'offered')
        .addSelect("count(*) FILTER (WHERE s.state = 'downloading' AND s.lastEventAt >= :stalledBefore)", 'downloading')
        .addSelect("count(*) FILTER (WHERE s.state = 'installing' AND s.lastEventAt >= :stalledBefore)", 'installing')
        .addSelect("count(*) FILTER (WHERE s.state IN ('downloading', 'installing') AND s.lastEventAt < :stalledBefore)", 'stalled')
        .addSelect("count(*) FILTER (WHERE s.state = 'installed' AND firmware_version_key(d.firmware_version) >= firmware_version_key(r.version))", 'installed')
        .addSelect("count(*) FILTER (WHERE s.state = 'failed')", 'failed')
        .addSelect("count(*) FILTER (WHERE s.heldBackReason IS NOT NULL AND s.state IN ('held_back', 'offered'))", 'heldBack')
        .addSelect(
          "count(*) FILTER (WHERE s.state = 'rolled_back' OR (s.state = 'installed' AND firmware_version_key(d.firmware_version) < firmware_version_key(r.version)))",
          'rolledBack',
        )
        .from(DeviceReleaseStateRecord, 's')
        .innerJoin(DEVICE_SUMMARIES, 'd', 'd.device_id = s.deviceId')
        .innerJoin(FirmwareReleaseRecord, 'r', 'r.id = s.releaseId')
        .where('s.releaseId = :id', { id })
        .setParameter('stalledBefore', stalledBefore);
      if (onlySinceBudgetStart) query.andWhere('(r.failureBudgetSince IS NULL OR s.lastEventAt >= r.failureBudgetSince)');
      return query.getRawOne<Record<keyof ReleaseCounts, string>>();
    });
    const count = (key: keyof ReleaseCounts) => Number(row?.[key] ?? 0);
    return {
      offered: count('offered'),
      downloading: count('downloading'),
      installing: count('installing'),
      installed: count('installed'),
      failed: count('failed'),
      rolledBack: count('rolledBack'),
      stalled: count('stalled'),
      heldBack: count('heldBack'),
    };
  }

  async wentBack(id: string, backVersion: string): Promise<number> {
    const row = await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .select('count(*)', 'went_back')
        .from(DeviceReleaseStateRecord, 's')
        .innerJoin(DEVICE_SUMMARIES, 'd', 'd.device_id = s.deviceId')
        .where('s.releaseId = :id', { id })
        .andWhere("s.state IN ('installed', 'rolled_back')")
        .andWhere('firmware_version_key(d.firmware_version) = firmware_version_key(:backVersion)', { backVersion })
        .getRawOne<{ went_back: string }>(),
    );
    return Number(row?.went_back ?? 0);
  }

  async crashFree(release: FirmwareRelease, onlySinceBudgetStart = false): Promise<CrashFreeCounts> {
    const row = await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .select('count(*)', 'bootConfirmed')
        .addSelect(`count(*) FILTER (WHERE ${DEVICE_CRASHED}(c.device_id, :version, c.confirmed_ts, c.confirmed_ts + interval '24 hours'))`, 'crashed')
        .from((confirmed) => {
          const query = confirmed
            .select('e.deviceId', 'device_id')
            .addSelect('min(e.ts)', 'confirmed_ts')
            .from(OtaEventRecord, 'e')
            .innerJoin(DeviceReleaseStateRecord, 's', 's.deviceId = e.deviceId AND s.releaseId = :id')
            .innerJoin(FirmwareReleaseRecord, 'r', 'r.id = s.releaseId')
            .where("e.type = 'boot_confirmed'")
            .andWhere('firmware_version_key(e.toVersion) = firmware_version_key(r.version)');
          if (onlySinceBudgetStart) query.andWhere('(r.failureBudgetSince IS NULL OR e.receivedAt >= r.failureBudgetSince)');
          return query.groupBy('e.deviceId');
        }, 'c')
        .setParameters({ id: release.id, version: release.version })
        .getRawOne<{ bootConfirmed: string; crashed: string }>(),
    );
    return { bootConfirmed: Number(row?.bootConfirmed ?? 0), crashed: Number(row?.crashed ?? 0) };
  }

  async watchedReleases(): Promise<FirmwareRelease[]> {
    const live = { paused: false, revoked: false };
    const records = await this.orm.run((manager) => manager.find(FirmwareReleaseRecord, { where: [{ maxFailurePercent: Not(IsNull()), ...live }, { minCrashFreePercent: Not(IsNull()), ...live }] }));
    return records.map(toRelease);
  }
}
