import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { EventLog } from '../../events/index.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { Env } from '../../../config/env.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { DomainError, NotFoundError } from '../../../shared/domain-error.js';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { belowCrashFreeTarget, exceedsFailureBudget, type CrashFreeCounts, type FirmwareRelease } from '../domain/firmware-release.js';
import { FirmwareReleaseRepository, type ReleaseCounts, type ReleaseFilter } from '../domain/firmware-release.repository.js';

export class FirmwareReleaseExistsError extends DomainError {
  constructor() {
    super('FIRMWARE_RELEASE_EXISTS', 'conflict', 'A release with this version, hardwareId and channel exists already.');
  }
}

export interface PublishRelease {
  version: string;
  hardwareId?: string;
  channel?: OtaChannel;
  url: string;
  sha256: string;
  size: number;
  releaseNotes?: string;
  rolloutPercent?: number;
  minFromVersion?: string;
  maxFailurePercent?: number;
  minCrashFreePercent?: number;
}

export interface ReleaseChange {
  rolloutPercent?: number;
  paused?: boolean;
  revoked?: boolean;
}

export interface ReleaseStatus {
  release: FirmwareRelease;
  counts: ReleaseCounts;
  /** Devices that confirmed booting it, and those of them that crashed on it within a day. */
  crashFree: CrashFreeCounts;
  /** The release paused itself because too many devices failed it, or too few stayed crash-free. */
  autoPaused: boolean;
}

/** Administrators publish releases and steer their rollout; releases with a failure budget pause themselves. */
@Injectable()
export class FirmwareReleasesService {
  constructor(
    private readonly releases: FirmwareReleaseRepository,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly audit: AuditLog,
  ) {}

  async publish(by: AuditContext, input: PublishRelease): Promise<FirmwareRelease> {
    const now = this.clock.now();
    const release: FirmwareRelease = {
      id: randomUUID(),
      version: FirmwareVersion.parse(input.version).value,
      hardwareId: input.hardwareId ?? null,
      channel: input.channel ?? 'stable',
      url: input.url,
      sha256: input.sha256.toLowerCase(),
      size: input.size,
      releaseNotes: input.releaseNotes ?? null,
      rolloutPercent: input.rolloutPercent ?? 100,
      minFromVersion: input.minFromVersion === undefined ? null : FirmwareVersion.parse(input.minFromVersion).value,
      maxFailurePercent: input.maxFailurePercent ?? null,
      minCrashFreePercent: input.minCrashFreePercent ?? null,
      paused: false,
      autoPausedAt: null,
      revoked: false,
      publishedAt: now,
      updatedAt: now,
    };
    const detail = { version: release.version, hardwareId: release.hardwareId, channel: release.channel, rolloutPercent: release.rolloutPercent };
    const inserted = await this.releases.insert(release, (tx) =>
      this.audit.record(tx, { by, action: 'firmware.release_created', target: `firmware_release:${release.id}`, detail, at: now }),
    );
    if (!inserted) throw new FirmwareReleaseExistsError();
    return release;
  }

  list(filter: ReleaseFilter): Promise<FirmwareRelease[]> {
    return this.releases.list(filter);
  }

  async change(by: AuditContext, id: string, change: ReleaseChange): Promise<FirmwareRelease> {
    const now = this.clock.now();
    const onChanged = (tx: SqlRunner, release: FirmwareRelease) =>
      this.audit.record(tx, { by, action: 'firmware.release_changed', target: `firmware_release:${id}`, detail: { version: release.version, ...change }, at: now });
    const updated = await this.releases.update(
      id,
      (release) => ({
      ...release,
      rolloutPercent: change.rolloutPercent ?? release.rolloutPercent,
      paused: change.paused ?? release.paused,
      // Resuming by hand ends an automatic pause; from then on the failure budget counts only
      // devices that report after the resume, or the next check would pause it again at once.
      autoPausedAt: change.paused === false ? null : release.autoPausedAt,
      revoked: change.revoked ?? release.revoked,
      updatedAt: now,
      }),
      onChanged,
    );
    if (!updated) throw new NotFoundError('No firmware release has this id.');
    return updated;
  }

  async status(id: string): Promise<ReleaseStatus> {
    const found = await this.releases.findById(id);
    if (!found) throw new NotFoundError('No firmware release has this id.');
    const release = (await this.pauseIfOverBudget(found)) ? ((await this.releases.findById(id)) ?? found) : found;
    const stalledBefore = new Date(this.clock.now().getTime() - this.env.OTA_STALL_TIMEOUT_SEC * 1000);
    return { release, counts: await this.releases.counts(id, stalledBefore), crashFree: await this.releases.crashFree(release), autoPaused: release.autoPausedAt !== null };
  }

  /** Pauses each live release whose failure share among finished devices exceeds its budget. */
  async pauseIfFailing(releases: FirmwareRelease[]): Promise<void> {
    for (const release of releases) await this.pauseIfOverBudget(release);
  }

  async pauseFailingReleases(): Promise<void> {
    await this.pauseIfFailing(await this.releases.watchedReleases());
  }

  /** Why the release should pause itself now, if it should: too many failed installs, or too few devices crash-free. */
  private async pauseReason(release: FirmwareRelease): Promise<'failures' | 'crashes' | null> {
    if (release.maxFailurePercent !== null && exceedsFailureBudget(release, await this.releases.counts(release.id, new Date(0), true))) return 'failures';
    if (release.minCrashFreePercent !== null && belowCrashFreeTarget(release, await this.releases.crashFree(release, true))) return 'crashes';
    return null;
  }

  /** True when this call paused it. `release` may be a little stale: autoPause only pauses a live one. */
  private async pauseIfOverBudget(release: FirmwareRelease): Promise<boolean> {
    if (release.paused || release.revoked) return false;
    const reason = await this.pauseReason(release);
    if (reason === null) return false;
    const now = this.clock.now();
    const data = { releaseId: release.id, version: release.version, hardwareId: release.hardwareId, channel: release.channel, reason, maxFailurePercent: release.maxFailurePercent, minCrashFreePercent: release.minCrashFreePercent };
    // One ota.release_paused per device the rollout reached, so each owner hears of it.
    return this.releases.autoPause(release.id, now, async (tx, devices) => {
      for (const device of devices) await this.events.record(tx, { type: 'ota.release_paused', deviceId: device.deviceId, ownerId: device.ownerId, occurredAt: now, data });
    });
  }
}
