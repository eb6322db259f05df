import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { strongTag } from '../../../shared/http/etag.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { BoundedMap } from '../../../shared/memory/bounded-map.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import { selectRelease, type FirmwareRelease, type OtaTarget } from '../domain/firmware-release.js';
import { FirmwareReleaseRepository } from '../domain/firmware-release.repository.js';
import { OtaDevices } from '../domain/ota-devices.js';
import { heldBackBy, type HeldBackReason } from '../domain/battery-guard.js';
import { BatteryReadingsQueries } from '../domain/battery-readings.queries.js';
import { coalesceProgress, PROGRESS_COALESCE_SEC, releaseStateAfter, runningVersionAfter, type OtaEvent } from '../domain/ota-event.js';
import { OtaEventStore, type HistoryFilter, type ReleaseStateChange, type StoredOtaEvent } from '../domain/ota-event.store.js';
import { ReleaseOfferStore } from '../domain/release-offer.store.js';
import { EventLog } from '../../events/index.js';
import { FirmwareReleasesService } from './firmware-releases.service.js';

/** How far ahead of the service's clock an event's ts may be (gateway clocks drift). */
const MAX_FUTURE_SKEW_MS = 5 * 60 * 1000;
/** An outcome this instance recorded is written again after this long: another instance may have recorded a different one since. */
const OUTCOME_REWRITE_MS = 60_000;

/**
 * The reports that end an update attempt, each told once as an event (ota.succeeded / ota.failed).
 * boot_confirmed is not one: it follows install_succeeded, after the reboot into the new firmware.
 */
const OUTCOMES = new Set<OtaEvent['type']>(['install_succeeded', 'download_failed', 'verify_failed', 'install_failed', 'rolled_back']);
const isOutcome = (event: OtaEvent): boolean => OUTCOMES.has(event.type);

export interface LatestFirmware {
  currentVersion: string;
  /** The release to install now; null when there is none or it waits for the batteries. */
  release: FirmwareRelease | null;
  /** The release that waits, and why; null when nothing is held back. */
  heldBack: { reason: HeldBackReason; release: FirmwareRelease } | null;
  etag: string;
}

export interface EventsOutcome {
  accepted: number;
  duplicates: number;
  coalesced: number;
  rejected: Array<{ index: number; code: 'TS_IN_FUTURE' }>;
}

/** The gateway side of OTA: what to install next, and what happened while installing. */
@Injectable()
export class OtaService {
  /**
   * What this instance last recorded per (release, device), offered or held back, and when: a
   * device polling without If-None-Match costs no write while its outcome stays the same.
   */
  private readonly recordedOutcomes: BoundedMap<{ outcome: string; at: number }>;

  constructor(
    private readonly devices: OtaDevices,
    private readonly offers: ReleaseOfferStore,
    private readonly releases: FirmwareReleaseRepository,
    private readonly releasesService: FirmwareReleasesService,
    private readonly events: OtaEventStore,
    private readonly eventLog: EventLog,
    private readonly batteries: BatteryReadingsQueries,
    private readonly clock: Clock,
    caches: MemoryCaches,
  ) {
    this.recordedOutcomes = caches.perDevice('ota_outcomes');
  }

  /**
   * From memory while neither the device nor any release changed: no query for a poll that has no
   * release to offer. A release to offer waits while the device's batteries say so (heldBackBy:
   * their newest soc and temperature, one read), and the answer's ETag says which.
   */
  async latest(deviceId: string): Promise<LatestFirmware> {
    const device = await this.requireDevice(deviceId);
    const candidate = selectRelease(await this.offers.offerableReleases(), device, this.clock.now());
    const reason = candidate ? heldBackBy(await this.batteries.of(deviceId), device.minSoc, device.temperatureRange) : null;
    const fingerprint = createHash('sha256')
      .update(`${device.firmwareVersion.value}|${candidate?.id ?? '-'}|${reason ?? '-'}`)
      .digest('base64url')
      .slice(0, 22);
    return {
      currentVersion: device.firmwareVersion.value,
      release: reason ? null : candidate,
      heldBack: reason && candidate ? { reason, release: candidate } : null,
      etag: strongTag(`ota-${fingerprint}`),
    };
  }

  /**
   * The release status counts devices offered and held back: the outcome of a poll is written when
   * it differs from what this instance last wrote for the device and release, or that is a minute old.
   */
  async recordOutcome(deviceId: string, latest: LatestFirmware): Promise<void> {
    const release = latest.release ?? latest.heldBack?.release;
    if (!release) return;
    const outcome = latest.heldBack?.reason ?? 'offered';
    const key = `${release.id}:${deviceId}`;
    const now = this.clock.now();
    const recorded = this.recordedOutcomes.get(key);
    if (recorded && recorded.outcome === outcome && now.getTime() - recorded.at < OUTCOME_REWRITE_MS) return;
    if (latest.heldBack) await this.offers.recordHeldBack(deviceId, release.id, latest.heldBack.reason, now);
    else await this.offers.recordOffer(deviceId, release.id, now);
    this.recordedOutcomes.set(key, { outcome, at: now.getTime() });
  }

  /**
   * Stores a batch idempotently on (device, ts, type), coalescing download progress; moves the
   * device's state per release and its firmwareVersion along; then lets releases with a failure
   * budget pause themselves. All in one transaction, answered after the commit.
   */
  async ingest(deviceId: string, batch: OtaEvent[]): Promise<EventsOutcome> {
    const now = this.clock.now();
    const rejected: EventsOutcome['rejected'] = [];
    const valid: OtaEvent[] = [];
    batch.forEach((event, index) => {
      if (event.ts.getTime() - now.getTime() > MAX_FUTURE_SKEW_MS) rejected.push({ index, code: 'TS_IN_FUTURE' });
      else valid.push(event);
    });
    const device = await this.requireDevice(deviceId);
    const toVersions = [...new Set(valid.map((event) => event.toVersion).filter((version): version is string => version !== null))];
    const candidates = await this.releases.forVersions(toVersions, device.hardwareId);

    let firmwareChanged = false;
    const stored = await this.events.inBatch(deviceId, async (batch) => {
      const times = valid.map((event) => event.ts.getTime());
      const storedProgress =
        valid.length === 0
          ? new Map<string, Date[]>()
          : await batch.storedProgress(toVersions, new Date(Math.min(...times) - PROGRESS_COALESCE_SEC * 1000), new Date(Math.max(...times)));
      const { kept, coalesced } = coalesceProgress(valid, storedProgress);
      const inserted = await batch.insert(kept, now);
      for (const outcome of inserted.filter(isOutcome)) {
        await this.eventLog.record(batch.tx, {
          type: outcome.type === 'install_succeeded' ? 'ota.succeeded' : 'ota.failed',
          deviceId,
          ownerId: batch.ownerId,
          occurredAt: now,
          data: { fromVersion: outcome.fromVersion, toVersion: outcome.toVersion, report: outcome.type, reportedAt: outcome.ts.toISOString(), errorCode: outcome.errorCode },
        });
      }

      const changes = latestStatePerRelease(kept, (version) => pickRelease(candidates, version, device.channel));
      await batch.applyStates(changes, now);

      const report = latestVersionReport(kept);
      if (report && (batch.firmwareReportedAt === null || report.ts > batch.firmwareReportedAt)) {
        firmwareChanged = report.version !== device.firmwareVersion.value;
        await batch.setFirmwareVersion(report.version, report.ts);
      }
      if (inserted.length > 0) await batch.touchLastSeen(now);
      return { accepted: inserted.length, duplicates: kept.length - inserted.length, coalesced, touched: candidates.filter((release) => changes.some((change) => change.releaseId === release.id)) };
    });
    if (!stored) throw new UnauthorizedError('The device no longer exists.');
    const { accepted, duplicates, coalesced, touched } = stored;
    if (firmwareChanged) this.devices.firmwareChanged(deviceId);
    await this.releasesService.pauseIfFailing(touched);
    return { accepted, duplicates, coalesced, rejected };
  }

  history(filter: HistoryFilter): Promise<StoredOtaEvent[]> {
    return this.events.history(filter);
  }

  private async requireDevice(deviceId: string): Promise<OtaTarget> {
    const device = await this.devices.target(deviceId);
    if (!device) throw new UnauthorizedError('The device no longer exists.');
    return device;
  }
}

/** Among releases of a version: the one for this hardware over a generic one, then the device's channel. */
function pickRelease(candidates: FirmwareRelease[], version: string, channel: string): FirmwareRelease | null {
  const matching = candidates.filter((release) => FirmwareVersion.parse(release.version).compareTo(FirmwareVersion.parse(version)) === 0);
  const score = (release: FirmwareRelease) => (release.hardwareId !== null ? 2 : 0) + (release.channel === channel ? 1 : 0);
  return matching.sort((a, b) => score(b) - score(a))[0] ?? null;
}

/** One change per release: the state after its latest event in the batch. */
function latestStatePerRelease(events: OtaEvent[], releaseOf: (version: string) => FirmwareRelease | null): ReleaseStateChange[] {
  const latest = new Map<string, ReleaseStateChange>();
  for (const event of events) {
    const state = releaseStateAfter(event);
    if (state === null || event.toVersion === null) continue;
    const release = releaseOf(event.toVersion);
    if (!release) continue;
    const current = latest.get(release.id);
    if (!current || event.ts >= current.eventTs) latest.set(release.id, { releaseId: release.id, state, eventTs: event.ts });
  }
  return [...latest.values()];
}

/** The version the device runs after the batch's latest event that says so. */
function latestVersionReport(events: OtaEvent[]): { version: string; ts: Date } | null {
  let report: { version: string; ts: Date } | null = null;
  for (const event of events) {
    const version = runningVersionAfter(event);
    if (version !== null && (!report || event.ts >= report.ts)) report = { version, ts: event.ts };
  }
  return report;
}
