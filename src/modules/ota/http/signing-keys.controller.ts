import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, type PipeTransform } from '@nestjs/common';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { FirmwareSigningKeysService } from '../application/firmware-signing-keys.service.js';
import { ListSigningKeysQuery, RegisterSigningKeyRequest, RevokedSigningKeyResponse, SigningKeyListResponse, SigningKeyResponse } from './admin-firmware.dto.js';
import { KEY_ID_PATTERN } from './firmware-fields.js';

class KeyIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!KEY_ID_PATTERN.test(value)) throw new ValidationFailedError([{ field: 'keyId', message: 'keyId must be 1 to 64 characters of A-Z, a-z, 0-9, . _ : -' }]);
    return value;
  }
}

/** The firmware team's public keys, which signed releases are verified against. */
@ApiTags('admin')
@Controller('admin/firmware/signing-keys')
export class SigningKeysController {
  constructor(private readonly keys: FirmwareSigningKeysService) {}

  @Post()
  @AdminAuth()
  @ApiOperation({
    operationId: 'registerSigningKey',
    summary: 'Register a public key of the firmware team',
    description: 'Releases signed by its private key can then be published. The same key again under the same keyId is answered 200 as it stands; another key under that keyId is a 409.',
  })
  @ApiBody({ type: RegisterSigningKeyRequest })
  @ApiResponse({ status: 201, type: SigningKeyResponse, description: 'Registered.' })
  @ApiResponse({ status: 200, type: SigningKeyResponse, description: 'This key was registered under this keyId already.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 409: ['SIGNING_KEY_EXISTS'] })
  async register(@Requester() by: AuditContext, @Body() body: RegisterSigningKeyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SigningKeyResponse> {
    const { added, key } = await this.keys.register(by, body.keyId, body.publicKey);
    if (!added) void reply.status(200);
    return SigningKeyResponse.from(key);
  }

  @Get()
  @AdminAuth()
  @ApiOperation({ operationId: 'listSigningKeys', summary: 'Signing keys, the newest first, revoked ones included' })
  @ApiResponse({ status: 200, type: SigningKeyListResponse, description: 'Every key.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@Query() query: ListSigningKeysQuery): Promise<SigningKeyListResponse> {
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor, (key) => KEY_ID_PATTERN.test(key));
    const keys = await this.keys.list(limit + 1, after && { createdAt: after.ts, keyId: after.key });
    const items = keys.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(SigningKeyResponse.from), nextCursor: keys.length > limit ? encodeTimeCursor(last.createdAt, last.keyId) : null };
  }

  // POST …/revoke rather than DELETE …/{keyId}: the key stays, revoked, and a two-segment path would
  // be ambiguous with /admin/firmware/{id}/status.
  @Post(':keyId/revoke')
  @HttpCode(200)
  @AdminAuth()
  @ApiOperation({
    operationId: 'revokeSigningKey',
    summary: 'Revoke a signing key',
    description: 'No release can be published with it any more, and every release it signed that is still offered is paused (resume one by hand to offer it again). Kept, revoked, so the releases it signed still name it. Again: answered as it stands.',
  })
  @ApiParam({ name: 'keyId', example: 'fw-team-2026' })
  @ApiResponse({ status: 200, type: RevokedSigningKeyResponse, description: 'Revoked, with the releases this paused.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async revoke(@Requester() by: AuditContext, @Param('keyId', KeyIdPipe) keyId: string): Promise<RevokedSigningKeyResponse> {
    const { key, paused } = await this.keys.revoke(by, keyId);
    return { ...SigningKeyResponse.from(key), pausedReleaseIds: paused.map((release) => release.id) };
  }
}
