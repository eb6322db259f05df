import { Body, Controller, Get, Param, ParseUUIDPipe, Patch, Post, Put, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Env } from '../../../config/env.js';
import { FirmwareImages } from '../application/firmware-images.js';
import { RouteConfig } from '@nestjs/platform-fastify';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { DomainError, ValidationFailedError } from '../../../shared/domain-error.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { FirmwareReleasesService } from '../application/firmware-releases.service.js';
import { FirmwareSymbols } from '../application/firmware-symbols.js';
import {
  ChangeFirmwareRequest,
  FirmwareReleaseListResponse,
  FirmwareReleaseResponse,
  FirmwareReleaseStatusResponse,
  ListFirmwareQuery,
  PublishFirmwareRequest,
  SymbolMapRequest,
  SymbolMapResponse,
  SYMBOL_MAP_MAX_BYTES,
} from './admin-firmware.dto.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ReleaseIdParam = () =>
  Param('id', new ParseUUIDPipe({ exceptionFactory: () => new ValidationFailedError([{ field: 'id', message: 'id must be a release id (UUID)' }]) }));

@ApiTags('admin')
@Controller('admin/firmware')
export class AdminFirmwareController {
  constructor(
    private readonly releases: FirmwareReleasesService,
    private readonly symbols: FirmwareSymbols,
    private readonly images: FirmwareImages,
    private readonly env: Env,
  ) {}

  @Post()
  @AdminAuth()
  // Up to 10,000 targetDeviceIds: ~700 kB of JSON.
  @RouteConfig({ bodyLimit: 1024 * 1024 })
  @ApiOperation({
    operationId: 'publishFirmware',
    summary: 'Publish a firmware release',
    description:
      'A signed release (signature and signingKeyId, as `npm run firmware:sign` prints them) is verified against the registered key first: a signature that does not verify, or a key that is unknown or revoked, is a 400 and nothing is stored. Unsigned releases are refused while FIRMWARE_REQUIRE_SIGNATURE is on (the default outside development). A second release with the same version, hardwareId and channel is a 409.',
  })
  @ApiBody({ type: PublishFirmwareRequest })
  @ApiResponse({ status: 201, type: FirmwareReleaseResponse, description: 'Published.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['FIRMWARE_SIGNATURE_REQUIRED', 'FIRMWARE_SIGNATURE_INVALID', 'SIGNING_KEY_UNKNOWN', 'SIGNING_KEY_REVOKED'], 409: ['FIRMWARE_RELEASE_EXISTS'] })
  async publish(@Requester() by: AuditContext, @Body() body: PublishFirmwareRequest): Promise<FirmwareReleaseResponse> {
    return FirmwareReleaseResponse.from(await this.releases.publish(by, body));
  }

  @Get()
  @AdminAuth()
  @ApiOperation({ operationId: 'listFirmware', summary: 'Firmware releases, newest first' })
  @ApiResponse({ status: 200, type: FirmwareReleaseListResponse, description: 'A page of releases.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@Query() query: ListFirmwareQuery): Promise<FirmwareReleaseListResponse> {
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor, (key) => UUID.test(key));
    const rows = await this.releases.list({
      channel: query.channel,
      hardwareId: query.hardwareId,
      version: query.version,
      includeRevoked: query.includeRevoked === 'true',
      limit: limit + 1,
      after: after && { publishedAt: after.ts, id: after.key },
    });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(FirmwareReleaseResponse.from), nextCursor: rows.length > limit ? encodeTimeCursor(last.publishedAt, last.id) : null };
  }

  @Patch(':id')
  @AdminAuth()
  @ApiOperation({ operationId: 'changeFirmware', summary: 'Change a release\'s rollout percent, pause or revoke it' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiBody({ type: ChangeFirmwareRequest })
  @ApiResponse({ status: 200, type: FirmwareReleaseResponse, description: 'The release after the change.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'] })
  async change(@Requester() by: AuditContext, @ReleaseIdParam() id: string, @Body() body: ChangeFirmwareRequest): Promise<FirmwareReleaseResponse> {
    return FirmwareReleaseResponse.from(await this.releases.change(by, id, { rolloutPercent: body.rolloutPercent, paused: body.paused, revoked: body.revoked, rollbackTo: body.rollbackTo }));
  }

  @Get(':id/status')
  @AdminAuth()
  @ApiOperation({ operationId: 'getFirmwareStatus', summary: 'Where the devices stand with a release' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiResponse({ status: 200, type: FirmwareReleaseStatusResponse, description: 'Counts per state, and whether the release paused itself.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async status(@ReleaseIdParam() id: string): Promise<FirmwareReleaseStatusResponse> {
    return FirmwareReleaseStatusResponse.from(await this.releases.status(id));
  }

  @Put(':id/image')
  @AdminAuth()
  @ApiOperation({
    operationId: 'putFirmwareImage',
    summary: 'Upload the image of a release published without a url',
    description:
      'The bytes of the image as `application/octet-stream`, streamed into the database in 256 KiB pieces: at most FIRMWARE_MAX_BYTES (default 16 MiB). Its size and SHA-256 must be the release\'s — those of its signed manifest — or nothing is stored (400 FIRMWARE_IMAGE_MISMATCH; an upload cut short too). Once stored whole the release is offered, its url being /api/v1/device/firmware/{id}/image. Uploading again replaces the image with the same bytes. The whole upload must arrive within REQUEST_TIMEOUT_MS.',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiConsumes('application/octet-stream')
  @ApiBody({ required: true, schema: { type: 'string', format: 'binary' }, description: 'The image bytes.' })
  @ApiResponse({ status: 200, type: FirmwareReleaseResponse, description: 'Stored: the release, no longer awaiting its image.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED', 'FIRMWARE_IMAGE_MISMATCH'], 404: ['NOT_FOUND'], 409: ['FIRMWARE_IMAGE_NOT_HOSTED'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'] })
  async putImage(@Requester() by: AuditContext, @ReleaseIdParam() id: string, @Req() request: FastifyRequest): Promise<FirmwareReleaseResponse> {
    const length = Number(request.headers['content-length'] ?? 0);
    if (length > this.env.FIRMWARE_MAX_BYTES) throw new DomainError('PAYLOAD_TOO_LARGE', 'too-large', `The image exceeds FIRMWARE_MAX_BYTES (${this.env.FIRMWARE_MAX_BYTES} bytes).`);
    const body = request.body;
    if (!body || typeof (body as AsyncIterable<Buffer>)[Symbol.asyncIterator] !== 'function') {
      throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'unsupported-media-type', 'Send the image as application/octet-stream.');
    }
    return FirmwareReleaseResponse.from(await this.images.upload(by, id, body as AsyncIterable<Buffer>));
  }

  @Put(':id/symbols')
  @AdminAuth()
  @RouteConfig({ bodyLimit: SYMBOL_MAP_MAX_BYTES })
  @ApiOperation({
    operationId: 'putFirmwareSymbols',
    summary: 'Attach a symbol map to a release, so crash backtraces name functions',
    description:
      'The text `nm --print-size --numeric-sort` prints for the release\'s ELF (e.g. `xtensa-esp32-elf-nm -S -n build/app.elf`): one `<address> <size> <type> <name>` per line, in hex. Code symbols (T, t, W, w) are kept, other lines skipped; none at all is a 400. Replaces an earlier map. Up to 8 MiB (gzip accepted).',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiBody({ type: SymbolMapRequest })
  @ApiResponse({ status: 200, type: SymbolMapResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'] })
  async putSymbols(@Requester() by: AuditContext, @ReleaseIdParam() id: string, @Body() body: SymbolMapRequest): Promise<SymbolMapResponse> {
    return this.symbols.upload(by, id, body.text);
  }
}
