import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { FirmwareReleaseRepository } from '../domain/firmware-release.repository.js';
import { FirmwareSymbolStore, type StoredSymbols } from '../domain/firmware-symbol.store.js';
import { functionAt, parseSymbolMap } from '../domain/symbol-map.js';

/** Maps kept in memory at most: a map is up to a few MB, and crash reads name a handful of versions. */
const CACHED_MAPS = 16;

/**
 * Symbol maps of releases: uploaded by administrators, read to name the functions of crash
 * backtraces (the crashes module asks through `name`). A map read is kept in memory and checked
 * against its upload time before use, so a replaced map is never served stale.
 */
@Injectable()
export class FirmwareSymbols {
  private readonly cache = new Map<string, StoredSymbols>();

  constructor(
    private readonly releases: FirmwareReleaseRepository,
    private readonly store: FirmwareSymbolStore,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async upload(by: AuditContext, releaseId: string, text: string): Promise<{ releaseId: string; symbols: number }> {
    const release = await this.releases.findById(releaseId);
    if (!release) throw new NotFoundError('No firmware release has this id.');
    const symbols = parseSymbolMap(text);
    const now = this.clock.now();
    await this.store.save(releaseId, symbols, now, (tx) =>
      this.audit.record(tx, { by, action: 'firmware.release_changed', target: `firmware_release:${releaseId}`, detail: { symbols: symbols.length }, at: now }),
    );
    this.cache.delete(releaseId);
    return { releaseId, symbols: symbols.length };
  }

  /**
   * For each backtrace, the functions of its addresses in its `version` as it runs on its
   * `hardwareId`: by the map of the release of that version for that hardware, else of the one for
   * any hardware; null where no map names one. Each version and hardware is looked up once.
   */
  async name(backtraces: ReadonlyArray<{ version: string; hardwareId: string | null; addresses: readonly string[] }>): Promise<Array<Array<string | null>>> {
    const maps = new Map<string, Promise<StoredSymbols | null>>();
    return Promise.all(
      backtraces.map(async ({ version, hardwareId, addresses }) => {
        const key = `${version}\u0000${hardwareId ?? ''}`;
        let map = maps.get(key);
        if (!map) maps.set(key, (map = this.mapFor(version, hardwareId)));
        const symbols = (await map)?.symbols;
        return addresses.map((address) => (symbols ? functionAt(symbols, address) : null));
      }),
    );
  }

  private async mapFor(version: string, hardwareId: string | null): Promise<StoredSymbols | null> {
    const candidates = await this.releases.forVersions([version], hardwareId ?? '');
    candidates.sort((a, b) => (a.hardwareId === null ? 1 : 0) - (b.hardwareId === null ? 1 : 0));
    for (const release of candidates) {
      const map = await this.mapOf(release.id);
      if (map) return map;
    }
    return null;
  }

  private async mapOf(releaseId: string): Promise<StoredSymbols | null> {
    const uploadedAt = await this.store.uploadedAt(releaseId);
    if (uploadedAt === null) return null;
    const cached = this.cache.get(releaseId);
    if (cached && cached.uploadedAt.getTime() === uploadedAt.getTime()) return cached;
    const loaded = await this.store.load(releaseId);
    if (!loaded) return null;
    if (this.cache.size >= CACHED_MAPS) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(releaseId, loaded);
    return loaded;
  }
}
