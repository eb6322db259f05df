import type { OutgoingHttpHeaders } from 'node:http';
import { Controller, Get, Headers, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentDevice, DeviceAuth } from '../../../auth/auth.decorators.js';
import type { DevicePrincipal } from '../../../auth/principals.js';
import { DomainError } from '../../../shared/domain-error.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { FirmwareImages } from '../application/firmware-images.js';

/** The one range a request asks for, as RFC 9110 reads `Range` (a single bytes range; any other form is ignored). */
export type WantedBytes = { kind: 'all' } | { kind: 'part'; start: number; end: number } | { kind: 'none' };

/**
 * What to send for `range` and `ifRange` over an image of `size` bytes tagged `etag`: all of it
 * without a usable Range (or when If-Range names another version), the part asked, or none (416)
 * when it starts at or past the end.
 */
export function wantedBytes(range: string | undefined, ifRange: string | undefined, etag: string, size: number): WantedBytes {
  if (range === undefined || (ifRange !== undefined && ifRange.trim() !== etag)) return { kind: 'all' };
  const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  if (!match || (match[1] === '' && match[2] === '')) return { kind: 'all' };
  if (match[1] === '') {
    const suffix = Number(match[2]);
    return suffix === 0 ? { kind: 'none' } : { kind: 'part', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size) return { kind: 'none' };
  if (end < start) return { kind: 'all' };
  return { kind: 'part', start, end };
}

class RangeNotSatisfiableError extends DomainError {
  constructor() {
    super('RANGE_NOT_SATISFIABLE', 'range-not-satisfiable', 'The range starts at or beyond the end of the image: Content-Range gives its size.');
  }
}

@ApiTags('ota')
@Controller('device/firmware')
export class FirmwareDownloadController {
  constructor(private readonly images: FirmwareImages) {}

  @Get(':releaseId/image')
  @DeviceAuth()
  @ApiOperation({
    operationId: 'downloadFirmwareImage',
    summary: 'Download the image of a release the service keeps (resumable)',
    description:
      'For a release whose offer `url` is this path. Only a device the release was offered to may download it, while it is live (404 otherwise). `Range: bytes=<from>-` resumes after a cut (206 with Content-Range); `If-Range` with the ETag (the image\'s SHA-256) makes sure the rest belongs to the same image. The bytes are streamed from the database, 64 KiB at a time, as fast as the connection takes them within the instance\'s FIRMWARE_DOWNLOAD_BYTES_PER_SEC, shared by its downloads. At most FIRMWARE_MAX_CONCURRENT_DOWNLOADS per instance: past that 503 with Retry-After.',
  })
  @ApiParam({ name: 'releaseId', format: 'uuid' })
  @ApiHeader({ name: 'Range', required: false, description: 'bytes=<first>-[<last>] or bytes=-<suffix length>; one range.' })
  @ApiHeader({ name: 'If-Range', required: false, description: 'The ETag of an earlier answer: the range applies only if the image is still that one.' })
  @ApiResponse({
    status: 200,
    description: 'The whole image.',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    headers: { ETag: { schema: { type: 'string' }, description: 'The SHA-256 of the image, quoted.' }, 'Accept-Ranges': { schema: { type: 'string' }, description: 'bytes' } },
  })
  @ApiResponse({
    status: 206,
    description: 'The range asked.',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    headers: { 'Content-Range': { schema: { type: 'string' }, description: 'bytes <first>-<last>/<size>' }, ETag: { schema: { type: 'string' } } },
  })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'], 416: ['RANGE_NOT_SATISFIABLE'], 503: ['SERVICE_UNAVAILABLE'] })
  async download(
    @CurrentDevice() device: DevicePrincipal,
    @UuidParam('releaseId', 'a release id') releaseId: string,
    @Headers('range') range: string | undefined,
    @Headers('if-range') ifRange: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const download = await this.images.openDownload(device.deviceId, releaseId);
    let streaming = false;
    try {
      const etag = `"${download.sha256}"`;
      const wanted = wantedBytes(range, ifRange, etag, download.size);
      void reply.header('ETag', etag).header('Accept-Ranges', 'bytes').header('Cache-Control', 'private, no-cache');
      if (wanted.kind === 'none') {
        void reply.header('Content-Range', `bytes */${download.size}`);
        throw new RangeNotSatisfiableError();
      }
      const [start, end] = wanted.kind === 'part' ? [wanted.start, wanted.end] : [0, download.size - 1];
      if (wanted.kind === 'part') void reply.status(206).header('Content-Range', `bytes ${start}-${end}/${download.size}`);
      void reply.header('Content-Type', 'application/octet-stream').header('Content-Length', String(end - start + 1));
      const pieces = download.read(start, end);
      // The first piece before the status line: a database that cannot serve is still a 503 problem.
      const first = await pieces.next();
      streaming = true;
      void streamOut(reply, first, pieces).finally(download.release);
    } finally {
      if (!streaming) download.release();
    }
  }
}

/**
 * Writes the answer's head and the pieces straight to the socket, each one only once the last has
 * been handed to the kernel: the download's one buffer is then free to take the next piece, and a
 * gateway that reads slowly holds the stream back rather than filling memory. A gateway that goes
 * away ends it; a failure halfway cuts the connection (the gateway resumes with Range).
 */
async function streamOut(reply: FastifyReply, first: IteratorResult<Buffer, void>, pieces: AsyncGenerator<Buffer, void, undefined>): Promise<void> {
  const raw = reply.raw;
  // Fastify sends nothing more; its onResponse hooks (logs, metrics) still run when the answer ends.
  reply.hijack();
  raw.writeHead(reply.statusCode, reply.getHeaders() as OutgoingHttpHeaders);
  try {
    for (let piece = first; !piece.done; piece = await pieces.next()) await written(raw, piece.value);
    raw.end();
  } catch {
    raw.destroy();
  } finally {
    await pieces.return();
  }
}

/** `piece` written to `raw` and handed to the kernel; rejects when the connection closes first. */
function written(raw: FastifyReply['raw'], piece: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (raw.destroyed) {
      reject(new Error('closed'));
      return;
    }
    const closed = () => reject(new Error('closed'));
    raw.once('close', closed);
    raw.write(piece, (error) => {
      raw.removeListener('close', closed);
      if (error) reject(error);
      else resolve();
    });
  });
}
