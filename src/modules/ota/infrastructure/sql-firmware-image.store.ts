import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { hostedImagePath } from '../domain/firmware-release.js';
import { FirmwareImageStore, IMAGE_CHUNK_BYTES, type DownloadableImage } from '../domain/firmware-image.store.js';

/** Images in 256 KiB rows: every instance serves them, and a range read fetches only its bytes (storage EXTERNAL). */
@Injectable()
export class SqlFirmwareImageStore extends FirmwareImageStore {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  async replace(releaseId: string, chunks: AsyncIterable<Buffer>, check: (tx: SqlRunner) => Promise<void>, now: Date): Promise<boolean> {
    const found = await this.sql.transaction(async (tx) => {
      // The row lock makes two uploads of one release take turns.
      const [release] = await tx.rows<{ id: string }>('SELECT id FROM firmware_releases WHERE id = $1 FOR UPDATE', [releaseId]);
      if (!release) return false;
      await tx.rows('DELETE FROM firmware_image_chunks WHERE release_id = $1', [releaseId]);
      let seq = 0;
      for await (const chunk of chunks) {
        await tx.rows('INSERT INTO firmware_image_chunks (release_id, seq, data) VALUES ($1, $2, $3)', [releaseId, seq, chunk], 'firmware_image_chunk_insert');
        seq += 1;
      }
      await check(tx);
      await tx.rows('UPDATE firmware_releases SET awaiting_image = false, updated_at = $2 WHERE id = $1', [releaseId, now]);
      return true;
    });
    if (found) this.feed.changed('firmware_releases');
    return found;
  }

  async downloadable(releaseId: string, deviceId: string): Promise<DownloadableImage | null> {
    const [row] = await this.sql.rows<{ size: string; sha256: string }>(
      `SELECT r.size, r.sha256 FROM firmware_releases r
         JOIN device_release_states s ON s.release_id = r.id AND s.device_id = $2 AND s.offered_at IS NOT NULL
        WHERE r.id = $1 AND r.url = $3 AND NOT r.revoked AND NOT r.paused AND NOT r.awaiting_image`,
      [releaseId, deviceId, hostedImagePath(releaseId)],
      'firmware_image_downloadable',
    );
    return row ? { size: Number(row.size), sha256: row.sha256 } : null;
  }

  async read(releaseId: string, offset: number, length: number): Promise<Buffer> {
    const seq = Math.floor(offset / IMAGE_CHUNK_BYTES);
    const [row] = await this.sql.rows<{ data: Buffer }>(
      'SELECT substring(data FROM $3::int FOR $4::int) AS data FROM firmware_image_chunks WHERE release_id = $1::uuid AND seq = $2::int',
      [releaseId, seq, offset - seq * IMAGE_CHUNK_BYTES + 1, length],
      'firmware_image_read',
    );
    if (!row) throw new Error(`firmware image ${releaseId} has no chunk ${seq}`);
    return row.data;
  }
}
