import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { hostedImagePath } from '../domain/firmware-release.js';
import { FirmwareImageStore, IMAGE_CHUNK_BYTES, type DownloadableImage, type PieceRead } from '../domain/firmware-image.store.js';
import { CopyBinaryPieces } from './copy-binary-pieces.js';

/** Images in 256 KiB rows: every instance serves them, and a range read fetches only its bytes (storage EXTERNAL). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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

  /**
   * All the reads in one COPY, in PostgreSQL's binary format: the bytes arrive as they are stored
   * and are copied straight into each read's buffer, where a SELECT would bring them as text (hex or
   * base64) to turn into a string and decode — work and garbage per byte on the instance's one
   * thread, at tens of MB/s during a rollout — and a statement per read.
   */
  async readInto(reads: readonly PieceRead[]): Promise<void> {
    const rows = reads.map(({ releaseId, offset, length, into }, index) => {
      const seq = Math.floor(offset / IMAGE_CHUNK_BYTES);
      const from = offset - seq * IMAGE_CHUNK_BYTES + 1;
      // COPY takes no parameters: the values are checked to be a uuid and integers before they go in.
      if (!UUID.test(releaseId) || ![seq, from, length].every((value) => Number.isSafeInteger(value) && value >= 0) || length > into.length) {
        throw new Error(`firmware image read out of bounds: ${JSON.stringify({ releaseId, offset, length })}`);
      }
      return `(${index}, '${releaseId}'::uuid, ${seq}, ${from}, ${length})`;
    });
    const pieces = new CopyBinaryPieces(reads);
    await this.sql.copyOut(
      `COPY (SELECT r.i, substring(c.data FROM r.from_byte FOR r.length) FROM (VALUES ${rows.join(', ')}) AS r (i, release_id, seq, from_byte, length)
               JOIN firmware_image_chunks c ON c.release_id = r.release_id AND c.seq = r.seq) TO STDOUT (FORMAT binary)`,
      (piece) => pieces.push(piece),
    );
    if (!pieces.finish()) throw new Error(`firmware image reads came back short: ${JSON.stringify(reads.map(({ releaseId, offset, length }) => ({ releaseId, offset, length })))}`);
  }
}
