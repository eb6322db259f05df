import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PageQuery } from '../../../shared/http/page-query.js';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsObject,
  IsInt,
  IsString,
  IsUrl,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { ReleaseStatus } from '../application/firmware-releases.service.js';
import type { EventsOutcome, LatestFirmware } from '../application/ota.service.js';
import type { FirmwareRelease } from '../domain/firmware-release.js';
import { OTA_EVENT_TYPES, type OtaEventType } from '../domain/ota-event.js';
import type { StoredOtaEvent } from '../domain/ota-event.store.js';
import { IsInstant } from '../../../shared/http/is-instant.decorator.js';
import { Optional } from '../../../shared/http/optional.decorator.js';

const VERSION_MESSAGE = 'must be a dotted numeric version such as 0.1.10';
const versionDoc = (description: string) => ({ description, example: '0.1.10', pattern: FirmwareVersion.PATTERN.source, maxLength: 64 });

/** Documentation examples shared by the request and response shapes of a release. */
const EXAMPLE_RELEASE_ID = '7d9f2c1e-4b6a-4e0f-8a3d-2c5b9e1f6a70';
const EXAMPLE_URL = 'https://firmware.example.com/gw/0.1.10.bin';
const EXAMPLE_SHA256 = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const EXAMPLE_SIZE = 1572864;
const EXAMPLE_HARDWARE_ID = 'esp32s3-7c:df:a1:0b:22:c4';
const EXAMPLE_RELEASE_NOTES = 'Fixes reconnect after a Wi-Fi outage; faster telemetry upload.';
const EXAMPLE_PUBLISHED_AT = '2026-11-20T09:00:00.000Z';

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
    example: { version: '0.1.10', url: EXAMPLE_URL, sha256: EXAMPLE_SHA256, size: EXAMPLE_SIZE, releaseNotes: EXAMPLE_RELEASE_NOTES, publishedAt: EXAMPLE_PUBLISHED_AT },
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
        ? { version: release.version, url: release.url, sha256: release.sha256, size: release.size, releaseNotes: release.releaseNotes, publishedAt: release.publishedAt.toISOString() }
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

// ---- dashboard: OTA history ----

export class OtaHistoryQuery extends PageQuery(200) {
  @ApiPropertyOptional({ format: 'date-time', description: 'Inclusive.' })
  @Optional()
  @IsString()
  @MaxLength(40)
  @IsInstant()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Exclusive.' })
  @Optional()
  @IsString()
  @MaxLength(40)
  @IsInstant()
  to?: string;

  @ApiPropertyOptional({ description: `Comma-separated event types (${OTA_EVENT_TYPES.join(', ')}).`, example: 'install_failed,rolled_back' })
  @Optional()
  @IsString()
  @MaxLength(400)
  type?: string;

}

export class OtaHistoryItemResponse {
  @ApiProperty({ example: '42' })
  id!: string;

  @ApiProperty({ format: 'date-time', description: 'Gateway time of the event.', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ format: 'date-time', description: 'When the service received it.', example: '2026-11-21T12:00:02.000Z' })
  receivedAt!: string;

  @ApiProperty({ enum: OTA_EVENT_TYPES })
  type!: OtaEventType;

  @ApiProperty({ type: 'string', nullable: true, example: '0.1.9' })
  fromVersion!: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: '0.1.10' })
  toVersion!: string | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 40 })
  progressPct!: number | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'E_SHA_MISMATCH' })
  errorCode!: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'SHA-256 of the downloaded image does not match the release' })
  message!: string | null;

  static from(event: StoredOtaEvent): OtaHistoryItemResponse {
    return {
      id: event.id,
      ts: event.ts.toISOString(),
      receivedAt: event.receivedAt.toISOString(),
      type: event.type,
      fromVersion: event.fromVersion,
      toVersion: event.toVersion,
      progressPct: event.progressPct,
      errorCode: event.errorCode,
      message: event.message,
    };
  }
}

export class OtaHistoryResponse {
  @ApiProperty({ type: [OtaHistoryItemResponse], description: 'Newest first.' })
  items!: OtaHistoryItemResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for older events; null on the last page.', example: 'MjAyNi0xMS0yMVQxMjowMDowMC4wMDBafDQy' })
  nextCursor!: string | null;
}

// ---- admin: firmware releases ----

export class PublishFirmwareRequest {
  @ApiProperty(versionDoc('Dotted numeric version.'))
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `version ${VERSION_MESSAGE}` })
  version!: string;

  @ApiPropertyOptional({ description: 'Only for this hardware; absent: for every hardware.', minLength: 1, maxLength: 128, example: EXAMPLE_HARDWARE_ID })
  @Optional()
  @IsString()
  @Length(1, 128)
  hardwareId?: string;

  @ApiPropertyOptional({ enum: ['stable', 'beta'], default: 'stable' })
  @Optional()
  @IsIn(['stable', 'beta'])
  channel?: 'stable' | 'beta';

  @ApiProperty({ description: 'https only; the service never fetches it.', example: EXAMPLE_URL, maxLength: 2048 })
  @IsString()
  @MaxLength(2048)
  @IsUrl({ protocols: ['https'], require_protocol: true, require_tld: false }, { message: 'url must be an https URL' })
  url!: string;

  @ApiProperty({ description: 'SHA-256 of the image, 64 hex digits.', pattern: '^[0-9a-fA-F]{64}$', example: EXAMPLE_SHA256 })
  @IsString()
  @Matches(/^[0-9a-fA-F]{64}$/, { message: 'sha256 must be 64 hex digits' })
  sha256!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 2147483647, description: 'Bytes.', example: EXAMPLE_SIZE })
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  size!: number;

  @ApiPropertyOptional({ maxLength: 10000, example: EXAMPLE_RELEASE_NOTES })
  @Optional()
  @IsString()
  @MaxLength(10_000)
  releaseNotes?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100, default: 100, description: 'Share of devices offered the release (staged rollout).' })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(100)
  rolloutPercent?: number;

  @ApiPropertyOptional(versionDoc('Only devices running at least this version are offered the release.'))
  @Optional()
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `minFromVersion ${VERSION_MESSAGE}` })
  minFromVersion?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description: 'Pause the release by itself when more than this share of the devices that finished it (at least 10) failed or rolled back.',
    example: 20,
  })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(100)
  maxFailurePercent?: number;
}

export class ChangeFirmwareRequest {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 100, example: 50 })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(100)
  rolloutPercent?: number;

  @ApiPropertyOptional({ description: 'A paused release is offered to nobody; false resumes it (also after an automatic pause).', example: false })
  @Optional()
  @IsBoolean()
  paused?: boolean;

  @ApiPropertyOptional({ description: 'A revoked release is never offered again unless un-revoked.', example: false })
  @Optional()
  @IsBoolean()
  revoked?: boolean;
}

export class ListFirmwareQuery extends PageQuery(100) {
  @ApiPropertyOptional({ enum: ['stable', 'beta'] })
  @Optional()
  @IsIn(['stable', 'beta'])
  channel?: 'stable' | 'beta';

  @ApiPropertyOptional({ maxLength: 128 })
  @Optional()
  @IsString()
  @Length(1, 128)
  hardwareId?: string;

  @ApiPropertyOptional(versionDoc('Only this version.'))
  @Optional()
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `version ${VERSION_MESSAGE}` })
  version?: string;

  @ApiPropertyOptional({ enum: ['true', 'false'], default: 'false', description: 'Include revoked releases.' })
  @Optional()
  @IsIn(['true', 'false'])
  includeRevoked?: 'true' | 'false';
}

export class FirmwareReleaseResponse {
  @ApiProperty({ format: 'uuid', example: EXAMPLE_RELEASE_ID })
  id!: string;
  @ApiProperty({ example: '0.1.10' })
  version!: string;
  @ApiProperty({ type: 'string', nullable: true, example: EXAMPLE_HARDWARE_ID })
  hardwareId!: string | null;
  @ApiProperty({ enum: ['stable', 'beta'] })
  channel!: 'stable' | 'beta';
  @ApiProperty({ example: EXAMPLE_URL })
  url!: string;
  @ApiProperty({ example: EXAMPLE_SHA256 })
  sha256!: string;
  @ApiProperty({ example: EXAMPLE_SIZE })
  size!: number;
  @ApiProperty({ type: 'string', nullable: true, example: EXAMPLE_RELEASE_NOTES })
  releaseNotes!: string | null;
  @ApiProperty({ type: 'integer', example: 50 })
  rolloutPercent!: number;
  @ApiProperty({ type: 'string', nullable: true, example: '0.1.4' })
  minFromVersion!: string | null;
  @ApiProperty({ type: 'integer', nullable: true, example: 20 })
  maxFailurePercent!: number | null;
  @ApiProperty({ example: false })
  paused!: boolean;
  @ApiProperty({ description: 'Paused by itself because too many devices failed it.', example: false })
  autoPaused!: boolean;
  @ApiProperty({ example: false })
  revoked!: boolean;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_PUBLISHED_AT })
  publishedAt!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  updatedAt!: string;

  static from(release: FirmwareRelease): FirmwareReleaseResponse {
    return {
      id: release.id,
      version: release.version,
      hardwareId: release.hardwareId,
      channel: release.channel,
      url: release.url,
      sha256: release.sha256,
      size: release.size,
      releaseNotes: release.releaseNotes,
      rolloutPercent: release.rolloutPercent,
      minFromVersion: release.minFromVersion,
      maxFailurePercent: release.maxFailurePercent,
      paused: release.paused,
      autoPaused: release.autoPausedAt !== null,
      revoked: release.revoked,
      publishedAt: release.publishedAt.toISOString(),
      updatedAt: release.updatedAt.toISOString(),
    };
  }
}

export class FirmwareReleaseListResponse {
  @ApiProperty({ type: [FirmwareReleaseResponse], description: 'Newest first.' })
  items!: FirmwareReleaseResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: 'MjAyNi0xMS0yMFQwOTowMDowMC4wMDBafDdkOWYyYzFlLTRiNmEtNGUwZi04YTNkLTJjNWI5ZTFmNmE3MA' })
  nextCursor!: string | null;
}

export class ReleaseCountsResponse {
  @ApiProperty({ description: 'Devices offered the release by GET /ota/latest.', example: 120 })
  offered!: number;
  @ApiProperty({ description: 'Downloading (and not stalled).', example: 8 })
  downloading!: number;
  @ApiProperty({ description: 'Installing (and not stalled).', example: 3 })
  installing!: number;
  @ApiProperty({ description: 'Installed and still running it (or newer).', example: 96 })
  installed!: number;
  @ApiProperty({ description: 'Download, verification or install failed.', example: 2 })
  failed!: number;
  @ApiProperty({ description: 'Rolled back, reported or seen (it now runs an older version).', example: 1 })
  rolledBack!: number;
  @ApiProperty({ description: 'Started a download or install and silent for OTA_STALL_TIMEOUT_SEC.', example: 0 })
  stalled!: number;
  @ApiProperty({ description: 'Not yet updating, whose latest poll held the release back for their batteries (low soc or temperature).', example: 4 })
  heldBack!: number;
}

export class FirmwareReleaseStatusResponse {
  @ApiProperty({ type: FirmwareReleaseResponse })
  release!: FirmwareReleaseResponse;

  @ApiProperty({ type: ReleaseCountsResponse })
  devices!: ReleaseCountsResponse;

  @ApiProperty({ description: 'The release paused itself: the failure share exceeded maxFailurePercent.', example: false })
  autoPaused!: boolean;

  static from(status: ReleaseStatus): FirmwareReleaseStatusResponse {
    return { release: FirmwareReleaseResponse.from(status.release), devices: status.counts, autoPaused: status.autoPaused };
  }
}
