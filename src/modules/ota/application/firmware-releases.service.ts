import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { EventLog } from '../../events/index.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { Env, firmwareSignatureRequired } from '../../../config/env.js';
import { normalizeTag } from '../../devices/index.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { DomainError, NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { belowCrashFreeTarget, exceedsFailureBudget, hostedImagePath, type CrashFreeCounts, type FirmwareRelease, type SignedManifest } from '../domain/firmware-release.js';
import { firmwareManifest, signatureHolds, type ManifestFields } from '../domain/firmware-manifest.js';
import { FirmwareSigningKeyStore } from '../domain/firmware-signing-key.store.js';
import { FirmwareReleaseRepository, type ReleaseCounts, type ReleaseFilter } from '../domain/firmware-release.repository.js';

export class FirmwareReleaseExistsError extends DomainError {
  constructor() {
    super('FIRMWARE_RELEASE_EXISTS', 'conflict', 'A release with this version, hardwareId and channel exists already.');
  }
}

export class FirmwareSignatureRequiredError extends DomainError {
  constructor() {
    super('FIRMWARE_SIGNATURE_REQUIRED', 'invalid', 'Releases must be signed here: add signature and signingKeyId (npm run firmware:sign prints both).');
  }
}

export class FirmwareSignatureInvalidError extends DomainError {
  constructor() {
    super('FIRMWARE_SIGNATURE_INVALID', 'invalid', "signature is not the signing key's signature of this release's manifest (version, hardwareId, sha256, size, minFromVersion).");
  }
}

export class SigningKeyUnknownError extends DomainError {
  constructor() {
    super('SIGNING_KEY_UNKNOWN', 'invalid', 'No signing key has this signingKeyId: an administrator registers it first.');
  }
}

export class SigningKeyRevokedError extends DomainError {
  constructor() {
    super('SIGNING_KEY_REVOKED', 'invalid', 'The signing key is revoked: sign with a live key.');
  }
}

export interface PublishRelease {
  version: string;
  hardwareId?: string;
  channel?: OtaChannel;
  /** Absent: the service keeps the image, uploaded after publishing. */
  url?: string;
  sha256: string;
  size: number;
  releaseNotes?: string;
  rolloutPercent?: number;
  minFromVersion?: string;
  maxFailurePercent?: number;
  minCrashFreePercent?: number;
  /** The campaign: devices with any of these tags, and these devices; neither: every device. */
  targetTags?: string[];
  targetDeviceIds?: string[];
  /** ISO 8601: offered from then on. */
  startsAt?: string;
  /** Both or neither: the Ed25519 signature (base64) of the release's manifest, and the key's id. */
  signature?: string;
  signingKeyId?: string;
}

export interface ReleaseChange {
  rolloutPercent?: number;
  paused?: boolean;
  revoked?: boolean;
  /** With revoked (or on a revoked release): the older release its devices go back to. */
  rollbackTo?: string;
}

export interface ReleaseStatus {
  release: FirmwareRelease;
  counts: ReleaseCounts;
  /** Devices that confirmed booting it, and those of them that crashed on it within a day. */
  crashFree: CrashFreeCounts;
  /** The release paused itself because too many devices failed it, or too few stayed crash-free. */
  autoPaused: boolean;
  /** Revoked with a way back: the release, and how many devices now run it after this one. */
  rollback: { releaseId: string; devices: number } | null;
}

/** The campaign's tags as devices carry them (lower case); a tag no device could carry is refused. */
function campaignTags(tags: string[]): string[] {
  const normalized = tags.map(normalizeTag);
  const bad = normalized.findIndex((tag) => tag === null);
  if (bad >= 0) throw new ValidationFailedError([{ field: `targetTags[${bad}]`, message: 'a tag is 1 to 32 of a-z, 0-9, . _ - (upper case is lowered)' }]);
  return [...new Set(normalized as string[])].sort();
}

/**
 * The release `change.rollbackTo` names, checked as a way back from `release`: it must be revoked
 * (now or by this change), and the other one live, older, and for the same hardware or any.
 */
function wayBack(release: FirmwareRelease, change: ReleaseChange, back: FirmwareRelease | null): string {
  const refuse = (message: string) => new ValidationFailedError([{ field: 'rollbackTo', message }]);
  if (!(change.revoked ?? release.revoked)) throw refuse('rollbackTo goes with revoked: true');
  if (!back || back.id === release.id) throw refuse('rollbackTo must name another release');
  if (back.revoked || back.paused) throw refuse('rollbackTo must name a live release (not revoked, not paused)');
  if (FirmwareVersion.parse(back.version).compareTo(FirmwareVersion.parse(release.version)) >= 0) throw refuse('rollbackTo must name an older version');
  if (back.hardwareId !== null && back.hardwareId !== release.hardwareId) throw refuse('rollbackTo must be for the same hardware, or for any');
  return back.id;
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
    private readonly signingKeys: FirmwareSigningKeyStore,
  ) {}

  /**
   * Publishes the release. A signed one is verified first (400 unless the signature is the named
   * live key's over its manifest); an unsigned one is refused while FIRMWARE_REQUIRE_SIGNATURE is on.
   */
  async publish(by: AuditContext, input: PublishRelease): Promise<FirmwareRelease> {
    const now = this.clock.now();
    const fields = {
      version: FirmwareVersion.parse(input.version).value,
      hardwareId: input.hardwareId ?? null,
      sha256: input.sha256.toLowerCase(),
      size: input.size,
      minFromVersion: input.minFromVersion === undefined ? null : FirmwareVersion.parse(input.minFromVersion).value,
    };
    const signed = await this.verifiedSignature(input, fields);
    if (input.url === undefined && input.size > this.env.FIRMWARE_MAX_BYTES) {
      throw new ValidationFailedError([{ field: 'size', message: `size must be at most FIRMWARE_MAX_BYTES (${this.env.FIRMWARE_MAX_BYTES}) for an image the service keeps` }]);
    }
    const id = randomUUID();
    const release: FirmwareRelease = {
      id,
      ...fields,
      channel: input.channel ?? 'stable',
      // Without a URL the service keeps the image: uploaded next (PUT …/image), offered once stored.
      url: input.url ?? hostedImagePath(id),
      releaseNotes: input.releaseNotes ?? null,
      rolloutPercent: input.rolloutPercent ?? 100,
      maxFailurePercent: input.maxFailurePercent ?? null,
      minCrashFreePercent: input.minCrashFreePercent ?? null,
      paused: false,
      autoPausedAt: null,
      revoked: false,
      awaitingImage: input.url === undefined,
      publishedAt: now,
      updatedAt: now,
      signed,
      targetTags: input.targetTags === undefined ? null : campaignTags(input.targetTags),
      targetDeviceIds: input.targetDeviceIds === undefined ? null : [...new Set(input.targetDeviceIds)].sort(),
      startsAt: input.startsAt === undefined ? null : new Date(input.startsAt),
      rollbackTo: null,
    };
    const detail = { version: release.version, hardwareId: release.hardwareId, channel: release.channel, rolloutPercent: release.rolloutPercent, ...(signed ? { signingKeyId: signed.keyId } : {}) };
    const inserted = await this.releases.insert(release, async (tx) => {
      // A revocation that committed since the check above must not leave this release offered.
      if (signed && !(await this.signingKeys.holdLive(tx, signed.keyId))) throw new SigningKeyRevokedError();
      await this.audit.record(tx, { by, action: 'firmware.release_created', target: `firmware_release:${release.id}`, detail, at: now });
    });
    if (!inserted) throw new FirmwareReleaseExistsError();
    return release;
  }

  private async verifiedSignature(input: PublishRelease, fields: ManifestFields): Promise<SignedManifest | null> {
    if (input.signature === undefined && input.signingKeyId === undefined) {
      if (firmwareSignatureRequired(this.env)) throw new FirmwareSignatureRequiredError();
      return null;
    }
    if (input.signature === undefined || input.signingKeyId === undefined) {
      const missing = input.signature === undefined ? 'signature' : 'signingKeyId';
      throw new ValidationFailedError([{ field: missing, message: `${missing} is required with ${missing === 'signature' ? 'signingKeyId' : 'signature'}` }]);
    }
    const key = await this.signingKeys.find(input.signingKeyId);
    if (!key) throw new SigningKeyUnknownError();
    if (key.revokedAt !== null) throw new SigningKeyRevokedError();
    const manifest = firmwareManifest(fields);
    if (!signatureHolds(key.publicKey, manifest, Buffer.from(input.signature, 'base64'))) throw new FirmwareSignatureInvalidError();
    return { keyId: key.keyId, signature: input.signature, manifest };
  }

  list(filter: ReleaseFilter): Promise<FirmwareRelease[]> {
    return this.releases.list(filter);
  }

  async change(by: AuditContext, id: string, change: ReleaseChange): Promise<FirmwareRelease> {
    const now = this.clock.now();
    const back = change.rollbackTo === undefined ? null : await this.releases.findById(change.rollbackTo);
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
      // A way back only from a revoked release; un-revoking it drops the way back.
      rollbackTo: change.revoked === false ? null : change.rollbackTo === undefined ? release.rollbackTo : wayBack(release, change, back),
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
    const back = release.rollbackTo === null ? null : await this.releases.findById(release.rollbackTo);
    return {
      release,
      counts: await this.releases.counts(id, stalledBefore),
      crashFree: await this.releases.crashFree(release),
      autoPaused: release.autoPausedAt !== null,
      rollback: back ? { releaseId: back.id, devices: await this.releases.wentBack(id, back.version) } : null,
    };
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
