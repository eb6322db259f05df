import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsString, Length, Matches } from 'class-validator';
import { API_KEY_SCOPES, type ApiKeyScope } from '../../../auth/principals.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { API_KEY_NAME_MAX_LENGTH, type ApiKey } from '../domain/api-key.js';

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

export class CreateApiKeyRequest {
  @ApiProperty({ example: 'Home Assistant', minLength: 1, maxLength: API_KEY_NAME_MAX_LENGTH, description: 'What the key is for, to recognise it in the list (trimmed; no control characters).' })
  @trimmed
  @IsString()
  @Length(1, API_KEY_NAME_MAX_LENGTH)
  // eslint-disable-next-line no-control-regex
  @Matches(/^[^\u0000-\u001f\u007f]*$/, { message: 'name must not contain control characters' })
  name!: string;

  @ApiProperty({
    enum: API_KEY_SCOPES,
    example: 'read',
    description: '`read`: the dashboard reads (GET) that take API keys. `write`: those, and the changes that take write keys (device configuration, alert rules, acknowledging alerts).',
  })
  @IsIn(API_KEY_SCOPES)
  scope!: ApiKeyScope;
}

/** limit (1–100) and cursor, as every list. */
export class ApiKeysQuery extends PageQuery(100) {}

export class ApiKeyResponse {
  @ApiProperty({ format: 'uuid', example: '5b8e0c1d-2f3a-4b5c-8d6e-7f8091a2b3c4' })
  keyId!: string;

  @ApiProperty({ example: 'Home Assistant' })
  name!: string;

  @ApiProperty({ enum: API_KEY_SCOPES, example: 'read' })
  scope!: ApiKeyScope;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-27T09:30:00.000Z', description: 'When the key was last accepted, to the minute; null: never used.' })
  lastUsedAt!: string | null;

  static from(apiKey: ApiKey): ApiKeyResponse {
    return { keyId: apiKey.keyId, name: apiKey.name, scope: apiKey.scope, createdAt: apiKey.createdAt.toISOString(), lastUsedAt: apiKey.lastUsedAt?.toISOString() ?? null };
  }
}

export class CreatedApiKeyResponse {
  @ApiProperty({ format: 'uuid', example: '5b8e0c1d-2f3a-4b5c-8d6e-7f8091a2b3c4' })
  keyId!: string;

  @ApiProperty({ example: 'Home Assistant' })
  name!: string;

  @ApiProperty({ enum: API_KEY_SCOPES, example: 'read' })
  scope!: ApiKeyScope;

  @ApiProperty({
    example: 'dck_q3Jm0vXz8bY1c2d3e4f5g6h7i8j9k0l1m2n3o4p5q6r',
    pattern: '^dck_[A-Za-z0-9_-]{43}$',
    description: 'The key: send it as `Authorization: Bearer <key>`. Shown only in this answer (the service keeps only a keyed hash of it): keep it.',
  })
  key!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  createdAt!: string;

  static from(apiKey: ApiKey, key: string): CreatedApiKeyResponse {
    return { keyId: apiKey.keyId, name: apiKey.name, scope: apiKey.scope, key, createdAt: apiKey.createdAt.toISOString() };
  }
}

export class ApiKeyListResponse {
  @ApiProperty({ type: [ApiKeyResponse] })
  items!: ApiKeyResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: 'MjAyNi0xMS0yN1QwOTowMDowMC4wMDBafDViOGUwYzFk' })
  nextCursor!: string | null;
}
