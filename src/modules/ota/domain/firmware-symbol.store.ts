import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { SymbolRange } from './symbol-map.js';

export interface StoredSymbols {
  symbols: SymbolRange[];
  uploadedAt: Date;
}

/** The firmware_symbols table. */
export abstract class FirmwareSymbolStore {
  /** Replaces the release's symbol map; `onSaved` runs in the same transaction. */
  abstract save(releaseId: string, symbols: SymbolRange[], at: Date, onSaved: (tx: SqlRunner) => Promise<void>): Promise<void>;
  /** When the release's map was uploaded, if it has one: a cheap check of a cached map. */
  abstract uploadedAt(releaseId: string): Promise<Date | null>;
  abstract load(releaseId: string): Promise<StoredSymbols | null>;
}
