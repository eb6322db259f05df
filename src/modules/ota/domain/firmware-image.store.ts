import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** Bytes per stored piece of an image: a range read fetches at most this much per statement. */
export const IMAGE_CHUNK_BYTES = 256 * 1024;

/** What a device may download: an image the service keeps whole, of a live release offered to it. */
export interface DownloadableImage {
  size: number;
  sha256: string;
}

/** The firmware_image_chunks table, and the release's awaiting_image mark. */
export abstract class FirmwareImageStore {
  /**
   * Replaces the release's image with `chunks` (each IMAGE_CHUNK_BYTES but the last), in one
   * transaction: `check` runs in it after the last chunk is written, and throws to keep nothing;
   * then the release stops awaiting its image. False when no release has the id.
   */
  abstract replace(releaseId: string, chunks: AsyncIterable<Buffer>, check: (tx: SqlRunner) => Promise<void>, now: Date): Promise<boolean>;
  /** The image, when the release is live, kept by the service, stored whole, and was offered to the device. */
  abstract downloadable(releaseId: string, deviceId: string): Promise<DownloadableImage | null>;
  /** Copies `length` bytes of the image from `offset`, which lie within one chunk, into `into` (from its start). */
  abstract readInto(releaseId: string, offset: number, length: number, into: Buffer): Promise<void>;
}
