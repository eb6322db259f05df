import type { OtaChannel } from '../../../src/shared/kernel/ota-channel.js';
import { FirmwareVersion } from '../../../src/shared/kernel/firmware-version.js';
import type { CrashFreeCounts, FirmwareRelease, OtaTarget, ReleaseState } from '../../../src/modules/ota/domain/firmware-release.js';
import type { SqlRunner } from '../../../src/shared/database/sql-runner.js';
import { FirmwareReleaseRepository, type ReleaseCounts, type ReleaseFilter, type RolloutDevice } from '../../../src/modules/ota/domain/firmware-release.repository.js';
import { OtaDevices } from '../../../src/modules/ota/domain/ota-devices.js';
import type { OtaEvent } from '../../../src/modules/ota/domain/ota-event.js';
import { OtaEventStore, type HistoryFilter, type OtaEventBatch, type ReleaseStateChange, type StoredOtaEvent } from '../../../src/modules/ota/domain/ota-event.store.js';
import { ReleaseOfferStore } from '../../../src/modules/ota/domain/release-offer.store.js';
import type { BatteryReadings, HeldBackReason } from '../../../src/modules/ota/domain/battery-guard.js';
import { BatteryReadingsQueries } from '../../../src/modules/ota/domain/battery-readings.queries.js';
import { FirmwareImageStore, type DownloadableImage, type PieceRead } from '../../../src/modules/ota/domain/firmware-image.store.js';
import { FirmwareSigningKeyStore, type FirmwareSigningKey, type PausedRelease } from '../../../src/modules/ota/domain/firmware-signing-key.store.js';

/*
 * In-memory fakes of the ota ports for unit tests. They share
 * one InMemoryOtaTables as the Sql and TypeORM adapters share the database, and store copies, so a
 * test sees only what a service saved. The SQL they stand for is tested end to end
 * (test/e2e/ota-events.e2e-spec.ts, ota-releases.e2e-spec.ts).
 */

export interface OtaDeviceRow {
  deviceId: string;
  hardwareId: string;
  firmwareVersion: string;
  channel: OtaChannel;
  firmwareReportedAt: Date | null;
  lastSeenAt: Date | null;
  /** The newest soc and temperature of each battery (device_latest_metrics). */
  socs: number[];
  temperatures: number[];
  minSoc: number;
  temperatureRange: { min: number; max: number };
  tags: string[];
}

export interface ReleaseStateRow {
  deviceId: string;
  releaseId: string;
  state: ReleaseState;
  offeredAt: Date | null;
  lastEventTs: Date | null;
  lastEventAt: Date | null;
}

interface StoredRelease {
  release: FirmwareRelease;
  failureBudgetSince: Date | null;
}

type FakeEvent = StoredOtaEvent & { deviceId: string };

const sameVersion = (a: string, b: string) => FirmwareVersion.parse(a).compareTo(FirmwareVersion.parse(b)) === 0;
const stateKey = (releaseId: string, deviceId: string) => `${releaseId}:${deviceId}`;

/** There is no SQL here: an event log given this transaction must not use it. */
const NO_SQL = { rows: () => Promise.reject(new Error('the in-memory OTA store has no SQL transaction')) };

/** The rows of firmware_releases, device_release_states, ota_events and the devices columns OTA reads. */
export class InMemoryOtaTables {
  readonly releases = new Map<string, StoredRelease>();
  readonly states = new Map<string, ReleaseStateRow>();
  readonly events: FakeEvent[] = [];
  readonly devices = new Map<string, OtaDeviceRow>();
  /** device_release_states.held_back_reason, by `${releaseId}:${deviceId}`. */
  readonly heldBack = new Map<string, HeldBackReason>();
  private nextEventId = 1;

  addDevice(device: Partial<OtaDeviceRow> & { deviceId: string }): OtaDeviceRow {
    const stored: OtaDeviceRow = {
      hardwareId: 'hw-a',
      firmwareVersion: '0.1.3',
      channel: 'stable',
      firmwareReportedAt: null,
      lastSeenAt: null,
      socs: [],
      temperatures: [],
      minSoc: 40,
      temperatureRange: { min: 0, max: 45 },
      tags: [],
      ...device,
    };
    this.devices.set(stored.deviceId, stored);
    return stored;
  }

  device(deviceId: string): OtaDeviceRow {
    const device = this.devices.get(deviceId);
    if (!device) throw new Error(`no device ${deviceId}`);
    return { ...device };
  }

  state(releaseId: string, deviceId: string): ReleaseStateRow | undefined {
    const state = this.states.get(stateKey(releaseId, deviceId));
    return state && { ...state };
  }

  /** Puts a device in a state directly, as earlier batches would have. */
  setState(state: ReleaseStateRow): void {
    this.states.set(stateKey(state.releaseId, state.deviceId), { ...state });
  }

  storeEvent(deviceId: string, event: OtaEvent, receivedAt: Date): void {
    this.events.push({ ...event, deviceId, id: String(this.nextEventId++), receivedAt });
  }
}

export class InMemoryFirmwareReleaseRepository extends FirmwareReleaseRepository {
  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async insert(release: FirmwareRelease, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    const taken = [...this.tables.releases.values()].some(
      ({ release: stored }) =>
        stored.id === release.id || (sameVersion(stored.version, release.version) && (stored.hardwareId ?? '') === (release.hardwareId ?? '') && stored.channel === release.channel),
    );
    if (taken) return false;
    await onInserted?.(NO_SQL);
    this.tables.releases.set(release.id, { release: { ...release }, failureBudgetSince: null });
    return true;
  }

  async findById(id: string): Promise<FirmwareRelease | null> {
    const stored = this.tables.releases.get(id);
    return stored ? { ...stored.release } : null;
  }

  async list(filter: ReleaseFilter): Promise<FirmwareRelease[]> {
    const newestFirst = (a: FirmwareRelease, b: FirmwareRelease) => b.publishedAt.getTime() - a.publishedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
    const before = (release: FirmwareRelease) => !filter.after || newestFirst(release, { ...release, publishedAt: filter.after.publishedAt, id: filter.after.id }) > 0;
    return [...this.tables.releases.values()]
      .map(({ release }) => ({ ...release }))
      .filter(
        (release) =>
          (filter.channel === undefined || release.channel === filter.channel) &&
          (filter.hardwareId === undefined || release.hardwareId === filter.hardwareId) &&
          (filter.version === undefined || sameVersion(release.version, filter.version)) &&
          (filter.includeRevoked || !release.revoked) &&
          before(release),
      )
      .sort(newestFirst)
      .slice(0, filter.limit);
  }

  async update(id: string, change: (release: FirmwareRelease) => FirmwareRelease, onUpdated?: (tx: SqlRunner, release: FirmwareRelease) => Promise<void>): Promise<FirmwareRelease | null> {
    const stored = this.tables.releases.get(id);
    if (!stored) return null;
    const next = change({ ...stored.release });
    const release = { ...stored.release, rolloutPercent: next.rolloutPercent, paused: next.paused, autoPausedAt: next.autoPausedAt, revoked: next.revoked, rollbackTo: next.rollbackTo, updatedAt: next.updatedAt };
    const resumed = stored.release.autoPausedAt !== null && next.autoPausedAt === null;
    await onUpdated?.(NO_SQL, release);
    this.tables.releases.set(id, { release, failureBudgetSince: resumed ? next.updatedAt : stored.failureBudgetSince });
    return { ...release };
  }

  async autoPause(id: string, now: Date, onPaused?: (tx: SqlRunner, devices: RolloutDevice[]) => Promise<void>): Promise<boolean> {
    const stored = this.tables.releases.get(id);
    if (!stored || stored.release.paused) return false;
    const reached = [...this.tables.states.values()].filter((state) => state.releaseId === id).map((state) => ({ deviceId: state.deviceId, ownerId: null }));
    await onPaused?.(NO_SQL, reached);
    this.tables.releases.set(id, { ...stored, release: { ...stored.release, paused: true, autoPausedAt: now, updatedAt: now } });
    return true;
  }

  /** The rule of TypeOrmFirmwareReleaseRepository.counts, over the in-memory rows. */
  async counts(id: string, stalledBefore: Date, onlySinceBudgetStart = false): Promise<ReleaseCounts> {
    const counts: ReleaseCounts = { offered: 0, downloading: 0, installing: 0, installed: 0, failed: 0, rolledBack: 0, stalled: 0, heldBack: 0 };
    const stored = this.tables.releases.get(id);
    if (!stored) return counts;
    for (const key of this.tables.heldBack.keys()) {
      const state = this.tables.states.get(key);
      if (key.startsWith(`${id}:`) && (!state || state.state === 'offered')) counts.heldBack++;
    }
    const releaseVersion = FirmwareVersion.parse(stored.release.version);
    for (const state of this.tables.states.values()) {
      const device = this.tables.devices.get(state.deviceId);
      if (state.releaseId !== id || !device) continue;
      const since = stored.failureBudgetSince;
      if (onlySinceBudgetStart && since !== null && !(state.lastEventAt !== null && state.lastEventAt >= since)) continue;
      const recent = state.lastEventAt !== null && state.lastEventAt >= stalledBefore;
      const silent = state.lastEventAt !== null && state.lastEventAt < stalledBefore;
      const runsOlder = FirmwareVersion.parse(device.firmwareVersion).compareTo(releaseVersion) < 0;
      if (state.offeredAt !== null) counts.offered++;
      if (state.state === 'downloading' && recent) counts.downloading++;
      if (state.state === 'installing' && recent) counts.installing++;
      if ((state.state === 'downloading' || state.state === 'installing') && silent) counts.stalled++;
      if (state.state === 'installed' && !runsOlder) counts.installed++;
      if (state.state === 'failed') counts.failed++;
      if (state.state === 'rolled_back' || (state.state === 'installed' && runsOlder)) counts.rolledBack++;
    }
    return counts;
  }

  /** Crash reports live in another module's table: a test sets what a release's devices did (crashFreeOf). */
  readonly crashFreeOf = new Map<string, CrashFreeCounts>();

  async wentBack(id: string, backVersion: string): Promise<number> {
    let devices = 0;
    for (const state of this.tables.states.values()) {
      if (state.releaseId !== id || (state.state !== 'installed' && state.state !== 'rolled_back')) continue;
      if (sameVersion(this.tables.device(state.deviceId).firmwareVersion, backVersion)) devices += 1;
    }
    return devices;
  }

  async crashFree(release: FirmwareRelease): Promise<CrashFreeCounts> {
    return this.crashFreeOf.get(release.id) ?? { bootConfirmed: 0, crashed: 0 };
  }

  async watchedReleases(): Promise<FirmwareRelease[]> {
    return [...this.tables.releases.values()]
      .map(({ release }) => ({ ...release }))
      .filter((release) => (release.maxFailurePercent !== null || release.minCrashFreePercent !== null) && !release.paused && !release.revoked);
  }

  async forVersions(versions: string[], hardwareId: string): Promise<FirmwareRelease[]> {
    return [...this.tables.releases.values()]
      .map(({ release }) => ({ ...release }))
      .filter((release) => versions.some((version) => sameVersion(release.version, version)) && (release.hardwareId === null || release.hardwareId === hardwareId));
  }
}

export class InMemoryReleaseOfferStore extends ReleaseOfferStore {
  /** How many times an outcome (offer or hold-back) was written: the service remembers them to save these writes. */
  offerWrites = 0;
  /** held_back_reason per release and device (the tables hold it). */
  get heldBack(): Map<string, HeldBackReason> {
    return this.tables.heldBack;
  }

  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async offerableReleases(): Promise<FirmwareRelease[]> {
    return [...this.tables.releases.values()].map(({ release }) => ({ ...release })).filter((release) => !release.revoked && !release.paused);
  }

  async recordOffer(deviceId: string, releaseId: string, now: Date): Promise<void> {
    this.offerWrites++;
    this.heldBack.delete(stateKey(releaseId, deviceId));
    const current = this.tables.state(releaseId, deviceId);
    this.tables.setState(current ? { ...current, offeredAt: current.offeredAt ?? now } : { deviceId, releaseId, state: 'offered', offeredAt: now, lastEventTs: null, lastEventAt: null });
  }

  async recordHeldBack(deviceId: string, releaseId: string, reason: HeldBackReason): Promise<void> {
    this.offerWrites++;
    this.heldBack.set(stateKey(releaseId, deviceId), reason);
  }
}

/**
 * One batch of a device at a time (a queue per device stands for the row lock); a batch's writes
 * are kept aside and applied only when its work returns, as a transaction commits.
 */
export class InMemoryOtaEventStore extends OtaEventStore {
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  inBatch<T>(deviceId: string, work: (batch: OtaEventBatch) => Promise<T>): Promise<T | null> {
    const run = (this.queues.get(deviceId) ?? Promise.resolve()).then(async () => {
      const device = this.tables.devices.get(deviceId);
      if (!device) return null;
      const batch = new InMemoryOtaEventBatch(this.tables, device);
      const result = await work(batch);
      batch.commit();
      return result;
    });
    this.queues.set(deviceId, run.catch(() => undefined));
    return run;
  }

  async history(filter: HistoryFilter): Promise<StoredOtaEvent[]> {
    const newestFirst = (a: FakeEvent, b: FakeEvent) => b.ts.getTime() - a.ts.getTime() || Number(b.id) - Number(a.id);
    return this.tables.events
      .filter(
        (event) =>
          event.deviceId === filter.deviceId &&
          (filter.from === null || event.ts >= filter.from) &&
          (filter.to === null || event.ts < filter.to) &&
          (filter.types === null || filter.types.includes(event.type)) &&
          (filter.before === null || event.ts < filter.before.ts || (event.ts.getTime() === filter.before.ts.getTime() && Number(event.id) < Number(filter.before.id))),
      )
      .sort(newestFirst)
      .slice(0, filter.limit)
      .map(({ deviceId: _deviceId, ...event }) => ({ ...event }));
  }
}

class InMemoryOtaEventBatch implements OtaEventBatch {
  readonly firmwareReportedAt: Date | null;
  readonly ownerId: string | null = null;
  readonly tx = NO_SQL;
  private readonly pending: Array<() => void> = [];
  private readonly inserted = new Set<string>();

  constructor(
    private readonly tables: InMemoryOtaTables,
    private readonly device: OtaDeviceRow,
  ) {
    this.firmwareReportedAt = device.firmwareReportedAt;
  }

  commit(): void {
    for (const apply of this.pending) apply();
  }

  async storedProgress(toVersions: string[], from: Date, to: Date): Promise<Map<string, Date[]>> {
    const byVersion = new Map<string, Date[]>();
    for (const event of this.tables.events) {
      if (event.deviceId !== this.device.deviceId || event.type !== 'download_progress' || event.toVersion === null || !toVersions.includes(event.toVersion)) continue;
      if (event.ts < from || event.ts > to) continue;
      byVersion.set(event.toVersion, [...(byVersion.get(event.toVersion) ?? []), event.ts]);
    }
    return byVersion;
  }

  async insert(events: OtaEvent[], receivedAt: Date): Promise<OtaEvent[]> {
    const identity = (ts: Date, type: string) => `${ts.getTime()}|${type}`;
    const stored = new Set(this.tables.events.filter((event) => event.deviceId === this.device.deviceId).map((event) => identity(event.ts, event.type)));
    const added: OtaEvent[] = [];
    for (const event of events) {
      const key = identity(event.ts, event.type);
      if (stored.has(key) || this.inserted.has(key)) continue;
      this.inserted.add(key);
      added.push(event);
      this.pending.push(() => this.tables.storeEvent(this.device.deviceId, { ...event }, receivedAt));
    }
    return added;
  }

  async applyStates(changes: ReleaseStateChange[], receivedAt: Date): Promise<void> {
    for (const change of changes) {
      this.pending.push(() => {
        const current = this.tables.state(change.releaseId, this.device.deviceId);
        if (current && current.lastEventTs !== null && current.lastEventTs > change.eventTs) return;
        this.tables.setState({ deviceId: this.device.deviceId, releaseId: change.releaseId, state: change.state, offeredAt: current?.offeredAt ?? null, lastEventTs: change.eventTs, lastEventAt: receivedAt });
      });
    }
  }

  async setFirmwareVersion(version: string, reportedAt: Date): Promise<void> {
    this.pending.push(() => {
      const device = this.tables.device(this.device.deviceId);
      this.tables.devices.set(device.deviceId, { ...device, firmwareVersion: version, firmwareReportedAt: reportedAt });
    });
  }

  async touchLastSeen(now: Date): Promise<void> {
    this.pending.push(() => {
      const device = this.tables.device(this.device.deviceId);
      const lastSeenAt = device.lastSeenAt !== null && device.lastSeenAt > now ? device.lastSeenAt : now;
      this.tables.devices.set(device.deviceId, { ...device, lastSeenAt });
    });
  }
}

export class InMemoryOtaDevices extends OtaDevices {
  /** Devices whose cached reads were dropped, in order. */
  readonly firmwareChanges: string[] = [];

  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async target(deviceId: string): Promise<OtaTarget | null> {
    const device = this.tables.devices.get(deviceId);
    return device
      ? { deviceId, hardwareId: device.hardwareId, firmwareVersion: FirmwareVersion.parse(device.firmwareVersion), channel: device.channel, minSoc: device.minSoc, temperatureRange: device.temperatureRange, tags: device.tags }
      : null;
  }

  firmwareChanged(deviceId: string): void {
    this.firmwareChanges.push(deviceId);
  }
}

/** The newest soc and temperature of the fake devices' batteries. */
export class InMemoryBatteryReadingsQueries extends BatteryReadingsQueries {
  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async of(deviceId: string): Promise<BatteryReadings> {
    const device = this.tables.devices.get(deviceId);
    return { socs: [...(device?.socs ?? [])], temperatures: [...(device?.temperatures ?? [])] };
  }
}

export class InMemoryFirmwareSigningKeyStore extends FirmwareSigningKeyStore {
  private readonly keys = new Map<string, FirmwareSigningKey>();

  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async add(key: FirmwareSigningKey, onAdded: (tx: SqlRunner) => Promise<void>): Promise<{ added: boolean; key: FirmwareSigningKey }> {
    const existing = this.keys.get(key.keyId);
    if (existing) return { added: false, key: { ...existing } };
    await onAdded(NO_SQL);
    this.keys.set(key.keyId, { ...key });
    return { added: true, key: { ...key } };
  }

  async find(keyId: string): Promise<FirmwareSigningKey | null> {
    const key = this.keys.get(keyId);
    return key ? { ...key } : null;
  }

  async list(limit: number, after?: { createdAt: Date; keyId: string }): Promise<FirmwareSigningKey[]> {
    const newestFirst = (a: { createdAt: Date; keyId: string }, b: { createdAt: Date; keyId: string }) => b.createdAt.getTime() - a.createdAt.getTime() || (a.keyId < b.keyId ? 1 : a.keyId > b.keyId ? -1 : 0);
    return [...this.keys.values()]
      .filter((key) => !after || newestFirst(after, key) < 0)
      .sort(newestFirst)
      .slice(0, limit)
      .map((key) => ({ ...key }));
  }

  async revoke(keyId: string, now: Date, onRevoked: (tx: SqlRunner, paused: PausedRelease[]) => Promise<void>): Promise<{ key: FirmwareSigningKey; paused: PausedRelease[] } | null> {
    const key = this.keys.get(keyId);
    if (!key) return null;
    if (key.revokedAt !== null) return { key: { ...key }, paused: [] };
    const paused: PausedRelease[] = [];
    for (const stored of this.tables.releases.values()) {
      const release = stored.release;
      if (release.signed?.keyId === keyId && !release.revoked && !release.paused) {
        paused.push({ id: release.id, version: release.version });
      }
    }
    await onRevoked(NO_SQL, paused);
    key.revokedAt = now;
    for (const { id } of paused) {
      const stored = this.tables.releases.get(id)!;
      stored.release = { ...stored.release, paused: true, updatedAt: now };
    }
    return { key: { ...key }, paused };
  }

  async holdLive(_tx: SqlRunner, keyId: string): Promise<boolean> {
    return this.keys.get(keyId)?.revokedAt === null;
  }
}

/** Images as arrays of pieces; a release's image is downloadable by the devices in `offeredTo`. */
export class InMemoryFirmwareImageStore extends FirmwareImageStore {
  readonly pieces = new Map<string, Buffer[]>();
  readonly offeredTo = new Set<string>();

  constructor(private readonly tables: InMemoryOtaTables) {
    super();
  }

  async replace(releaseId: string, chunks: AsyncIterable<Buffer>, check: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    const stored = this.tables.releases.get(releaseId);
    if (!stored) return false;
    const pieces: Buffer[] = [];
    for await (const chunk of chunks) pieces.push(chunk);
    await check(NO_SQL);
    this.pieces.set(releaseId, pieces);
    stored.release = { ...stored.release, awaitingImage: false };
    return true;
  }

  async downloadable(releaseId: string, deviceId: string): Promise<DownloadableImage | null> {
    const release = this.tables.releases.get(releaseId)?.release;
    if (!release || !this.pieces.has(releaseId) || !this.offeredTo.has(deviceId)) return null;
    return { size: release.size, sha256: release.sha256 };
  }

  async readInto(reads: readonly PieceRead[]): Promise<void> {
    for (const { releaseId, offset, length, into } of reads) Buffer.concat(this.pieces.get(releaseId)!).copy(into, 0, offset, offset + length);
  }
}
