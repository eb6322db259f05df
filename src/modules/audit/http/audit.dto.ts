import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import { IsInstant } from '../../../shared/http/is-instant.decorator.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { AUDIT_ACTIONS, AUDIT_ACTOR_KINDS, type AuditAction, type AuditActorKind, type AuditEntry } from '../domain/audit-entry.js';

export class DeviceAuditQuery extends PageQuery(200) {}

export class AdminAuditQuery extends PageQuery(200) {
  @ApiPropertyOptional({ example: 'gw-0001', description: 'Only entries of this device.' })
  @Optional()
  @IsString()
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 of A–Z a–z 0–9 . _ : -' })
  deviceId?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only entries whose actor is this account (userId).' })
  @Optional()
  @IsUUID('all', { message: 'actorId must be an account id (UUID)' })
  actorId?: string;

  @ApiPropertyOptional({ description: `Comma-separated actions (${AUDIT_ACTIONS.join(', ')}).`, example: 'device.claimed,device.released' })
  @Optional()
  @IsString()
  @MaxLength(1000)
  action?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Entries at or after this instant.' })
  @Optional()
  @IsInstant()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Entries before this instant.' })
  @Optional()
  @IsInstant()
  to?: string;
}

export class AuditActorResponse {
  @ApiProperty({ enum: AUDIT_ACTOR_KINDS, description: 'user: a customer (with apiKeyId when an API key authenticated); admin: an administrator; system, device: the service or a gateway.' })
  kind!: AuditActorKind;

  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, example: '7d9f2c1e-4b6a-4e0f-8a3d-2c5b9e1f6a70', description: "The account; null for system and device, and for an administrator in an owner's view." })
  userId!: string | null;

  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, example: null, description: 'The API key that authenticated the request, if one did.' })
  apiKeyId!: string | null;
}

export class AuditEntryResponse {
  @ApiProperty({ example: '1042', description: 'Increases in the order entries were recorded.' })
  id!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-25T12:00:00.000Z' })
  at!: string;

  @ApiProperty({ type: AuditActorResponse })
  actor!: AuditActorResponse;

  @ApiProperty({ enum: AUDIT_ACTIONS })
  action!: AuditAction;

  @ApiProperty({ type: 'string', nullable: true, example: 'gw-0001' })
  deviceId!: string | null;

  @ApiProperty({ example: 'device:gw-0001', description: 'What was changed: `<kind>:<id>`, or config_defaults / alert_rule_defaults.' })
  target!: string;

  @ApiProperty({ type: 'string', nullable: true, example: '203.0.113.7', description: "The client's address (behind TRUST_PROXY, the forwarded one); null where no request was involved, and for an administrator in an owner's view." })
  clientAddress!: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Depends on the action (what changed); never a secret.', example: { keys: ['telemetryIntervalSec'] } })
  detail!: Record<string, unknown>;

  static from(entry: AuditEntry): AuditEntryResponse {
    return {
      id: entry.id,
      at: entry.at.toISOString(),
      actor: { kind: entry.actor.kind, userId: entry.actor.userId, apiKeyId: entry.actor.apiKeyId },
      action: entry.action,
      deviceId: entry.deviceId,
      target: entry.target,
      clientAddress: entry.clientAddress,
      detail: entry.detail,
    };
  }
}

export class AuditPageResponse {
  @ApiProperty({ type: [AuditEntryResponse] })
  items!: AuditEntryResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}
