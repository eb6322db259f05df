import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** Bytes per stored piece of an image: a range read fetches at most this much per statement. */
export const IMAGE_CHUNK_BYTES = 256 * 1024;

/** What a device may download: an image the service keeps whole, of a live release offered to it. */
export interface DownloadableImage {
  size: number;
  sha256: string;
}

/** Bytes of an image that lie within one stored chunk, and the buffer they go to. */
export interface PieceRead {
  releaseId: string;
  offset: number;
  length: number;
  into: Buffer;
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
  /** Copies each read's `length` bytes of its image from `offset` (within one chunk) into its `into`, from the start. */
  abstract readInto(reads: readonly PieceRead[]): Promise<void>;
}
