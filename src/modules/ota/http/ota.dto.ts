import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsObject, IsInt, IsString, Length, Matches, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { EventsOutcome, LatestFirmware } from '../application/ota.service.js';
import { OTA_EVENT_TYPES, type OtaEventType } from '../domain/ota-event.js';
import { IsInstant } from '../../../shared/http/is-instant.decorator.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { EXAMPLE_KEY_ID, EXAMPLE_MANIFEST, EXAMPLE_PUBLISHED_AT, EXAMPLE_RELEASE_NOTES, EXAMPLE_SHA256, EXAMPLE_SIGNATURE, EXAMPLE_SIZE, EXAMPLE_URL, VERSION_MESSAGE, versionDoc } from './firmware-fields.js';

// ---- gateway: GET /ota/latest ----

export class FirmwareOfferResponse {
  @ApiProperty({ example: '0.1.10' })
  version!: string;

  @ApiProperty({ example: EXAMPLE_URL, description: 'Where the gateway downloads the image (the service never fetches it).' })
  url!: string;

  @ApiProperty({ example: EXAMPLE_SHA256, description: 'SHA-256 of the image, lower-case hex; verify before installing.' })
  sha256!: string;

  @ApiProperty({ example: EXAMPLE_SIZE, description: 'Bytes.' })
  size!: number;

  @ApiProperty({ type: 'string', nullable: true, example: EXAMPLE_RELEASE_NOTES })
  releaseNotes!: string | null;

  @ApiProperty({ format: 'date-time', example: EXAMPLE_PUBLISHED_AT })
  publishedAt!: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The signed manifest, exactly the bytes `signature` covers (docs/gateway.md, Signed firmware): verify the signature over it, then that its sha256 and size are those of the image you downloaded. null: an unsigned release.',
    example: EXAMPLE_MANIFEST,
  })
  manifest!: string | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'Ed25519 signature of `manifest` (64 bytes, base64) by the firmware team\'s key `signingKeyId`.', example: EXAMPLE_SIGNATURE })
  signature!: string | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'Which of the firmware team\'s keys signed it: firmware holds the public keys it trusts.', example: EXAMPLE_KEY_ID })
  signingKeyId!: string | null;

  @ApiProperty({
    description:
      'true: an older version than the gateway runs, offered because an administrator revoked the release it runs and named this one to go back to. The only downgrade the service offers; firmware accepts it only when this is true (docs/gateway.md).',
    example: false,
  })
  rollback!: boolean;
}

export class HeldBackResponse {
  @ApiProperty({ enum: ['LOW_SOC', 'TEMPERATURE'], example: 'LOW_SOC', description: 'LOW_SOC: a battery’s latest soc is below otaMinSoc. TEMPERATURE: a battery’s latest temperature is outside otaTemperatureRange.' })
  reason!: 'LOW_SOC' | 'TEMPERATURE';
}

export class LatestFirmwareResponse {
  @ApiProperty({ description: 'Whether `firmware` is newer than what the gateway runs.', example: true })
  updateAvailable!: boolean;

  @ApiProperty({ example: '0.1.9', description: 'The version the service believes the gateway runs.' })
  currentVersion!: string;

  @ApiProperty({
    type: FirmwareOfferResponse,
    nullable: true,
    description: 'The release to install; null when there is none.',
    example: {
      version: '0.1.10',
      url: EXAMPLE_URL,
      sha256: EXAMPLE_SHA256,
      size: EXAMPLE_SIZE,
      releaseNotes: EXAMPLE_RELEASE_NOTES,
      publishedAt: EXAMPLE_PUBLISHED_AT,
      manifest: EXAMPLE_MANIFEST,
      signature: EXAMPLE_SIGNATURE,
      signingKeyId: EXAMPLE_KEY_ID,
      rollback: false,
    },
  })
  firmware!: FirmwareOfferResponse | null;

  @ApiPropertyOptional({
    type: HeldBackResponse,
    example: { reason: 'LOW_SOC' },
    description: 'Present when a release is there for the gateway but waits for its batteries (updateAvailable is then false): a battery’s latest soc below otaMinSoc, or its temperature outside otaTemperatureRange (device configuration). Poll again later.',
  })
  heldBack?: HeldBackResponse;

  static from(latest: LatestFirmware): LatestFirmwareResponse {
    const release = latest.release;
    return {
      updateAvailable: release !== null,
      currentVersion: latest.currentVersion,
      firmware: release
        ? {
            version: release.version,
            url: release.url,
            sha256: release.sha256,
            size: release.size,
            releaseNotes: release.releaseNotes,
            publishedAt: release.publishedAt.toISOString(),
            manifest: release.signed?.manifest ?? null,
            signature: release.signed?.signature ?? null,
            signingKeyId: release.signed?.keyId ?? null,
            rollback: FirmwareVersion.parse(release.version).compareTo(FirmwareVersion.parse(latest.currentVersion)) < 0,
          }
        : null,
      ...(latest.heldBack ? { heldBack: { reason: latest.heldBack.reason } } : {}),
    };
  }
}

// ---- gateway: POST /ota/events ----

export class OtaEventRequest {
  @ApiProperty({ description: 'When it happened (gateway clock, ISO 8601 with zone).', example: '2026-11-21T12:00:00Z', format: 'date-time' })
  @IsString()
  @MaxLength(40)
  @IsInstant()
  ts!: string;

  @ApiProperty({ enum: OTA_EVENT_TYPES, example: 'download_started' })
  @IsIn(OTA_EVENT_TYPES as unknown as string[], { message: `type must be one of ${OTA_EVENT_TYPES.join(', ')}` })
  type!: OtaEventType;

  @ApiPropertyOptional(versionDoc('The version the update started from (after rolled_back: the version running again).'))
  @Optional()
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `fromVersion ${VERSION_MESSAGE}` })
  fromVersion?: string;

  @ApiPropertyOptional(versionDoc('The version the update goes to; names the release the event is about.'))
  @Optional()
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `toVersion ${VERSION_MESSAGE}` })
  toVersion?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100, example: 40 })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(100)
  progressPct?: number;

  @ApiPropertyOptional({ maxLength: 64, example: 'E_SHA_MISMATCH' })
  @Optional()
  @IsString()
  @Length(1, 64)
  errorCode?: string;

  @ApiPropertyOptional({ maxLength: 500, example: 'SHA-256 of the downloaded image does not match the release' })
  @Optional()
  @IsString()
  @MaxLength(500)
  message?: string;
}

export class IngestOtaEventsRequest {
  @ApiProperty({ type: [OtaEventRequest], minItems: 1, maxItems: 100 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  // @ValidateNested alone lets an element that is itself an array through (it validates that array's elements).
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => OtaEventRequest)
  events!: OtaEventRequest[];
}

export class RejectedEventResponse {
  @ApiProperty({ example: 0 })
  index!: number;

  @ApiProperty({ enum: ['TS_IN_FUTURE'] })
  code!: 'TS_IN_FUTURE';
}

export class IngestOtaEventsResponse {
  @ApiProperty({ description: 'Events stored by this request.', example: 3 })
  accepted!: number;

  @ApiProperty({ description: 'Events stored before (a retried batch).', example: 0 })
  duplicates!: number;

  @ApiProperty({ description: 'download_progress events folded into a stored one less than 30 s earlier.', example: 1 })
  coalesced!: number;

  @ApiProperty({ type: [RejectedEventResponse], description: 'Events refused on their own (ts more than 5 minutes ahead).' })
  rejected!: RejectedEventResponse[];

  static from(outcome: EventsOutcome): IngestOtaEventsResponse {
    return outcome;
  }
}
