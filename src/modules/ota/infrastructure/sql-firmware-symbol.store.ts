import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { FirmwareSymbolStore, type StoredSymbols } from '../domain/firmware-symbol.store.js';
import type { SymbolRange } from '../domain/symbol-map.js';

@Injectable()
export class SqlFirmwareSymbolStore extends FirmwareSymbolStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  save(releaseId: string, symbols: SymbolRange[], at: Date, onSaved: (tx: SqlRunner) => Promise<void>): Promise<void> {
    return this.sql.transaction(async (tx) => {
      await tx.rows(
        `INSERT INTO firmware_symbols (release_id, symbols, symbol_count, uploaded_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (release_id) DO UPDATE SET symbols = EXCLUDED.symbols, symbol_count = EXCLUDED.symbol_count, uploaded_at = EXCLUDED.uploaded_at`,
        [releaseId, JSON.stringify(symbols), symbols.length, at],
      );
      await onSaved(tx);
    });
  }

  async uploadedAt(releaseId: string): Promise<Date | null> {
    const [row] = await this.sql.rows<{ uploaded_at: Date }>('SELECT uploaded_at FROM firmware_symbols WHERE release_id = $1', [releaseId], 'symbols-uploaded-at');
    return row?.uploaded_at ?? null;
  }

  async load(releaseId: string): Promise<StoredSymbols | null> {
    const [row] = await this.sql.rows<{ symbols: SymbolRange[]; uploaded_at: Date }>('SELECT symbols, uploaded_at FROM firmware_symbols WHERE release_id = $1', [releaseId]);
    return row ? { symbols: row.symbols, uploadedAt: row.uploaded_at } : null;
  }
}
