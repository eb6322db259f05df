import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { DomainError, NotFoundError } from '../../../shared/domain-error.js';
import { GroupCommit } from '../../../shared/database/group-commit.js';
import { ByteBudget } from '../../../shared/rate-limit/byte-budget.js';
import { FirmwareImageStore, IMAGE_CHUNK_BYTES, type PieceRead } from '../domain/firmware-image.store.js';
import { FirmwareReleaseRepository } from '../domain/firmware-release.repository.js';
import { isHosted, type FirmwareRelease } from '../domain/firmware-release.js';

/**
 * Bytes a download reads at a time, and the one buffer it holds: a quarter of a stored piece, so
 * the many downloads of a rollout each hold little memory.
 */
export const DOWNLOAD_READ_BYTES = 64 * 1024;

/** Reads of waiting downloads one statement carries at most: 1 MiB. */
export const READS_PER_STATEMENT = 16;

/** What a client is told to wait when every download slot of the instance is taken. */
export const DOWNLOAD_RETRY_AFTER_SEC = 10;

export class FirmwareImageMismatchError extends DomainError {
  constructor(detail: string) {
    super('FIRMWARE_IMAGE_MISMATCH', 'invalid', `${detail} Nothing was stored.`);
  }
}

export class FirmwareImageNotHostedError extends DomainError {
  constructor() {
    super('FIRMWARE_IMAGE_NOT_HOSTED', 'conflict', 'This release was published with a url: its image lives there. Publish a release without url to have the service keep the image.');
  }
}

export class TooManyDownloadsError extends DomainError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'unavailable', 'Every firmware download slot of this instance is taken. Retry later; a Range request resumes where the last one stopped.', { retryAfterSec: DOWNLOAD_RETRY_AFTER_SEC });
  }
}

/** A download the caller streams with read() and must end with release(), whatever happens. */
export interface OpenDownload {
  size: number;
  sha256: string;
  /**
   * The bytes [start, end] (inclusive), DOWNLOAD_READ_BYTES at a time, each piece read into the
   * same buffer: a piece is valid until the next one is asked for, so write it out first. One
   * buffer per download, however long it runs: no garbage per read for the collector to chase.
   */
  read(start: number, end: number): AsyncGenerator<Buffer, void, undefined>;
  release(): void;
}

/**
 * `body`'s bytes in pieces of `size` (the last one shorter), each passed to `see` first. Holds at
 * most one piece and one incoming buffer in memory.
 */
async function* inPieces(body: AsyncIterable<Buffer>, size: number, see: (piece: Buffer) => void): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const incoming of body) {
    let data = incoming;
    while (pendingBytes + data.length >= size) {
      const take = size - pendingBytes;
      const piece = Buffer.concat([...pending, data.subarray(0, take)]);
      data = data.subarray(take);
      pending = [];
      pendingBytes = 0;
      see(piece);
      yield piece;
    }
    if (data.length > 0) {
      pending.push(data);
      pendingBytes += data.length;
    }
  }
  if (pendingBytes > 0) {
    const piece = Buffer.concat(pending);
    see(piece);
    yield piece;
  }
}

/**
 * Images the service keeps: uploaded by administrators after publishing a release without a URL,
 * checked against the release's (signed) size and SHA-256, and streamed to the gateways it was
 * offered to, resumable by Range, at most FIRMWARE_MAX_CONCURRENT_DOWNLOADS at once per instance.
 */
@Injectable()
export class FirmwareImages {
  private downloads = 0;
  /**
   * Downloads read one statement at a time per instance, and the reads that wait meanwhile go
   * together in the next one (up to READS_PER_STATEMENT): a rollout never takes more than one of
   * the connections uploads and polls need, and a hundred downloads cost a few statements, not a
   * hundred, each time round.
   */
  private readonly reads: GroupCommit<PieceRead, void>;
  /**
   * The buffers of downloads that ended, for the next ones: a download keeps its buffer for many
   * seconds, long enough to outlive the collector's young generation, so a buffer per download
   * would pile up as old garbage until a full collection. At most one per download slot.
   */
  private readonly spareBuffers: Buffer[] = [];
  /**
   * FIRMWARE_DOWNLOAD_BYTES_PER_SEC, shared by every download of the instance: each piece waits
   * its turn before it is read. Sending costs the instance's one thread time per byte, time the
   * API's requests need; a firmware download can wait, an upload or a dashboard should not.
   */
  private readonly budget: ByteBudget;

  constructor(
    private readonly releases: FirmwareReleaseRepository,
    private readonly images: FirmwareImageStore,
    private readonly env: Env,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
  ) {
    this.budget = new ByteBudget(env.FIRMWARE_DOWNLOAD_BYTES_PER_SEC);
    this.reads = new GroupCommit<PieceRead, void>({
      maxSizePerFlush: READS_PER_STATEMENT,
      maxConcurrentFlushes: 1,
      sizeOf: () => 1,
      commit: async (reads) => {
        await images.readInto(reads);
        return reads.map(() => undefined);
      },
    });
  }

  /** Stores the image streamed in `body` when it is the one the release names; otherwise keeps nothing (400). */
  async upload(by: AuditContext, releaseId: string, body: AsyncIterable<Buffer>): Promise<FirmwareRelease> {
    const release = await this.releases.findById(releaseId);
    if (!release) throw new NotFoundError('No firmware release has this id.');
    if (!isHosted(release)) throw new FirmwareImageNotHostedError();
    const hash = createHash('sha256');
    let size = 0;
    const pieces = inPieces(body, IMAGE_CHUNK_BYTES, (piece) => {
      size += piece.length;
      // Stop reading at the first byte too many: the release says how long the image is.
      if (size > release.size) throw new FirmwareImageMismatchError(`The image is longer than the release's size (${release.size} bytes).`);
      hash.update(piece);
    });
    const now = this.clock.now();
    const stored = await this.images.replace(
      releaseId,
      pieces,
      async (tx) => {
        if (size !== release.size) throw new FirmwareImageMismatchError(`The image has ${size} bytes; the release names ${release.size}.`);
        if (hash.digest('hex') !== release.sha256) throw new FirmwareImageMismatchError("The image's SHA-256 is not the release's.");
        await this.audit.record(tx, { by, action: 'firmware.release_changed', target: `firmware_release:${releaseId}`, detail: { version: release.version, imageStored: size }, at: now });
      },
      now,
    );
    if (!stored) throw new NotFoundError('No firmware release has this id.');
    return { ...release, awaitingImage: false, updatedAt: now };
  }

  /**
   * A download of the release's image by the device: 404 unless the release is live, its image kept
   * whole by the service, and it was offered to this device; 503 when every slot is taken.
   */
  async openDownload(deviceId: string, releaseId: string): Promise<OpenDownload> {
    if (this.downloads >= this.env.FIRMWARE_MAX_CONCURRENT_DOWNLOADS) throw new TooManyDownloadsError();
    this.downloads += 1;
    let released = false;
    let buffer: Buffer | null = null;
    const release = () => {
      if (released) return;
      released = true;
      this.downloads -= 1;
      if (buffer && this.spareBuffers.length < this.env.FIRMWARE_MAX_CONCURRENT_DOWNLOADS) this.spareBuffers.push(buffer);
    };
    try {
      const image = await this.images.downloadable(releaseId, deviceId);
      if (!image) throw new NotFoundError('No firmware image with this id is offered to this device.');
      const { reads, spareBuffers, budget } = this;
      return {
        ...image,
        async *read(start: number, end: number) {
          buffer ??= spareBuffers.pop() ?? Buffer.allocUnsafeSlow(DOWNLOAD_READ_BYTES);
          for (let offset = start; offset <= end; ) {
            const length = Math.min(end + 1 - offset, DOWNLOAD_READ_BYTES, IMAGE_CHUNK_BYTES - (offset % IMAGE_CHUNK_BYTES));
            const wait = budget.delayFor(length, performance.now());
            if (wait > 0) await delay(wait);
            await reads.submit({ releaseId, offset, length, into: buffer });
            yield buffer.subarray(0, length);
            offset += length;
          }
        },
        release,
      };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Downloads this instance streams now. */
  get activeDownloads(): number {
    return this.downloads;
  }
}
