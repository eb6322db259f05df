import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PageQuery } from '../../../shared/http/page-query.js';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsString, IsUrl, IsUUID, Length, Matches, Max, MaxLength, Min } from 'class-validator';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { IsInstant } from '../../../shared/http/is-instant.decorator.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { ReleaseStatus } from '../application/firmware-releases.service.js';
import { crashFreePercent, type FirmwareRelease } from '../domain/firmware-release.js';
import { publicKeyPem } from '../domain/firmware-manifest.js';
import type { FirmwareSigningKey } from '../domain/firmware-signing-key.store.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import {
  EXAMPLE_HARDWARE_ID,
  EXAMPLE_KEY_ID,
  EXAMPLE_SIGNATURE,
  KEY_ID_PATTERN,
  SIGNATURE_PATTERN,
  EXAMPLE_PUBLISHED_AT,
  EXAMPLE_PUBLIC_KEY,
  EXAMPLE_RELEASE_ID,
  EXAMPLE_RELEASE_NOTES,
  EXAMPLE_SHA256,
  EXAMPLE_SIZE,
  EXAMPLE_URL,
  VERSION_MESSAGE,
  versionDoc,
} from './firmware-fields.js';

export class PublishFirmwareRequest {
  @ApiProperty(versionDoc('Dotted numeric version.'))
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: `version ${VERSION_MESSAGE}` })
  version!: string;

  @ApiPropertyOptional({ description: 'Only for this hardware; absent: for every hardware. No control characters (it is a line of the signed manifest).', minLength: 1, maxLength: 128, example: EXAMPLE_HARDWARE_ID, pattern: '^[^\\x00-\\x1f\\x7f]+$' })
  @Optional()
  @IsString()
  @Length(1, 128)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  @Matches(/^[^\x00-\x1f\x7f]+$/, { message: 'hardwareId must not contain control characters' })
  hardwareId?: string;

  @ApiPropertyOptional({ enum: ['stable', 'beta'], default: 'stable' })
  @Optional()
  @IsIn(['stable', 'beta'])
  channel?: 'stable' | 'beta';

  @ApiPropertyOptional({
    description: 'Where gateways download the image: https only; the service never fetches it. Absent: the service keeps the image, uploaded next with PUT /admin/firmware/{id}/image; the release is offered once it is stored whole.',
    example: EXAMPLE_URL,
    maxLength: 2048,
  })
  @Optional()
  @IsString()
  @MaxLength(2048)
  @IsUrl({ protocols: ['https'], require_protocol: true, require_tld: false }, { message: 'url must be an https URL' })
  url?: string;

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

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description: 'Pause the release by itself when, among the devices that confirmed booting it (at least 10), fewer than this share stayed crash-free for the day after (crash reports of this version; devices still inside their day count as crash-free so far).',
    example: 95,
  })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(100)
  minCrashFreePercent?: number;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 50,
    description: 'A campaign by tags: offered to devices carrying any of these tags (as owners label them; upper case is lowered). With targetDeviceIds, to the devices of either. Absent, with no targetDeviceIds: every device. The staged rolloutPercent applies within the campaign.',
    example: ['pilot'],
  })
  @Optional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  targetTags?: string[];

  @ApiPropertyOptional({ type: [String], maxItems: 10000, description: 'A campaign by device ids: offered to these devices (up to 10,000), and to those of targetTags.', example: ['gw-0001', 'gw-0002'] })
  @Optional()
  @IsArray()
  @ArrayMaxSize(10_000)
  @Matches(DEVICE_ID_PATTERN, { each: true, message: 'each targetDeviceIds entry must be a device id (1 to 64 of A-Z, a-z, 0-9, . _ : -)' })
  targetDeviceIds?: string[];

  @ApiPropertyOptional({ format: 'date-time', description: 'Offered from this instant on (the service\'s clock); absent: at once.', example: '2026-12-07T02:00:00.000Z' })
  @Optional()
  @IsInstant()
  startsAt?: string;

  @ApiPropertyOptional({
    description:
      "Ed25519 signature (64 bytes, base64) of the release's manifest — version, hardwareId, sha256, size and minFromVersion as docs/gateway.md writes them — by the key `signingKeyId` names. `npm run firmware:sign` prints it. Required, with signingKeyId, while FIRMWARE_REQUIRE_SIGNATURE is on.",
    example: EXAMPLE_SIGNATURE,
    pattern: SIGNATURE_PATTERN.source,
  })
  @Optional()
  @IsString()
  @Matches(SIGNATURE_PATTERN, { message: 'signature must be the base64 of 64 bytes' })
  signature?: string;

  @ApiPropertyOptional({ description: 'The registered signing key that made `signature`.', example: EXAMPLE_KEY_ID, pattern: KEY_ID_PATTERN.source, maxLength: 64 })
  @Optional()
  @IsString()
  @Matches(KEY_ID_PATTERN, { message: 'signingKeyId must be 1 to 64 characters of A-Z, a-z, 0-9, . _ : -' })
  signingKeyId?: string;
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

  @ApiPropertyOptional({
    format: 'uuid',
    description:
      'Rollback, with revoked: true (or on a revoked release): devices that run this release are offered that older, live release for the same hardware (or any) — the only downgrade there is. Un-revoking drops it. The status shows how many went back.',
    example: EXAMPLE_RELEASE_ID,
  })
  @Optional()
  @IsUUID('all', { message: 'rollbackTo must be a release id (UUID)' })
  rollbackTo?: string;
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
  @ApiProperty({ type: 'integer', nullable: true, example: 95 })
  minCrashFreePercent!: number | null;
  @ApiProperty({ example: false })
  paused!: boolean;
  @ApiProperty({ description: 'Paused by itself because too many devices failed it, or too few stayed crash-free.', example: false })
  autoPaused!: boolean;
  @ApiProperty({ example: false })
  revoked!: boolean;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_PUBLISHED_AT })
  publishedAt!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  updatedAt!: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'The key that signed the release; null: published unsigned.', example: EXAMPLE_KEY_ID })
  signingKeyId!: string | null;
  @ApiProperty({ description: 'Published without a url, its image not uploaded whole yet (PUT …/image): offered to nobody until it is.', example: false })
  awaitingImage!: boolean;
  @ApiProperty({ type: [String], nullable: true, description: 'The campaign\'s tags; null: none.', example: ['pilot'] })
  targetTags!: string[] | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'How many device ids the campaign lists (the ids themselves are not repeated here); null: none.', example: 2 })
  targetDeviceCount!: number | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'Offered from then on; null: at once.', example: null })
  startsAt!: string | null;
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, description: 'Revoked with a way back: the release its devices are offered instead.', example: null })
  rollbackTo!: string | null;

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
      minCrashFreePercent: release.minCrashFreePercent,
      paused: release.paused,
      autoPaused: release.autoPausedAt !== null,
      revoked: release.revoked,
      publishedAt: release.publishedAt.toISOString(),
      updatedAt: release.updatedAt.toISOString(),
      signingKeyId: release.signed?.keyId ?? null,
      awaitingImage: release.awaitingImage,
      targetTags: release.targetTags,
      targetDeviceCount: release.targetDeviceIds?.length ?? null,
      startsAt: release.startsAt?.toISOString() ?? null,
      rollbackTo: release.rollbackTo,
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

export class ReleaseHealthResponse {
  @ApiProperty({ type: 'integer', description: 'Devices of the rollout that confirmed booting the release (boot_confirmed).', example: 96 })
  bootConfirmed!: number;
  @ApiProperty({ type: 'integer', description: 'Of those, devices that reported a crash of this version (panic, watchdog, CPU lockup) within 24 h of confirming it (gateway time).', example: 2 })
  crashed!: number;
  @ApiProperty({ type: 'number', nullable: true, description: 'Crash-free share of the confirming devices so far, one decimal; null before any confirmed.', example: 97.9 })
  crashFreePercent!: number | null;
  @ApiProperty({ type: 'number', nullable: true, description: 'Failed or rolled-back share of the devices that finished it (installed, failed, rolled back), one decimal; null before any finished.', example: 3.0 })
  failurePercent!: number | null;
}

export class RollbackStatusResponse {
  @ApiProperty({ format: 'uuid', example: EXAMPLE_RELEASE_ID })
  releaseId!: string;
  @ApiProperty({ type: 'integer', description: 'Devices this release reached that now run the release gone back to.', example: 12 })
  devices!: number;
}

export class FirmwareReleaseStatusResponse {
  @ApiProperty({ type: FirmwareReleaseResponse })
  release!: FirmwareReleaseResponse;

  @ApiProperty({ type: ReleaseCountsResponse })
  devices!: ReleaseCountsResponse;

  @ApiProperty({ type: ReleaseHealthResponse })
  health!: ReleaseHealthResponse;

  @ApiProperty({ description: 'The release paused itself: the failure share exceeded maxFailurePercent, or the crash-free share fell below minCrashFreePercent.', example: false })
  autoPaused!: boolean;

  @ApiProperty({
    type: RollbackStatusResponse,
    nullable: true,
    description: 'Revoked with rollbackTo: the release its devices go back to, and how many of the devices it reached run that one now.',
    example: null,
  })
  rollback!: RollbackStatusResponse | null;

  static from(status: ReleaseStatus): FirmwareReleaseStatusResponse {
    const finished = status.counts.installed + status.counts.failed + status.counts.rolledBack;
    return {
      release: FirmwareReleaseResponse.from(status.release),
      devices: status.counts,
      health: {
        bootConfirmed: status.crashFree.bootConfirmed,
        crashed: status.crashFree.crashed,
        crashFreePercent: crashFreePercent(status.crashFree),
        failurePercent: finished === 0 ? null : Math.round(((status.counts.failed + status.counts.rolledBack) * 1000) / finished) / 10,
      },
      autoPaused: status.autoPaused,
      rollback: status.rollback,
    };
  }
}

/** A symbol map is the text of `nm` over the firmware ELF: a few MB for a large image. */
export const SYMBOL_MAP_MAX_BYTES = 8 * 1024 * 1024;

export class SymbolMapRequest {
  @ApiProperty({ description: 'What `nm --print-size --numeric-sort` prints for the release\'s ELF.', example: '400d2f00 00000080 T bms_poll_task\n400d3a00 00000040 t read_cell_voltages\n' })
  @IsString()
  @MaxLength(SYMBOL_MAP_MAX_BYTES)
  text!: string;
}

export class SymbolMapResponse {
  @ApiProperty({ format: 'uuid', example: '7d9f2c1e-4b6a-4e0f-8a3d-2c5b9e1f6a70' })
  releaseId!: string;

  @ApiProperty({ type: 'integer', description: 'Code symbols kept.', example: 5321 })
  symbols!: number;
}

// ---- signing keys ----

export class RegisterSigningKeyRequest {
  @ApiProperty({ description: 'A name of your choice for the key; releases name it as signingKeyId. `npm run firmware:sign -- --generate-key` proposes its fingerprint.', example: EXAMPLE_KEY_ID, pattern: KEY_ID_PATTERN.source, maxLength: 64 })
  @IsString()
  @Matches(KEY_ID_PATTERN, { message: 'keyId must be 1 to 64 characters of A-Z, a-z, 0-9, . _ : -' })
  keyId!: string;

  @ApiProperty({ description: 'The Ed25519 public key: an SPKI PEM (`openssl pkey -pubout`), or base64 of its 32 bytes. Never the private key.', example: EXAMPLE_PUBLIC_KEY, maxLength: 1000 })
  @IsString()
  @MaxLength(1000)
  publicKey!: string;
}

export class SigningKeyResponse {
  @ApiProperty({ example: EXAMPLE_KEY_ID })
  keyId!: string;
  @ApiProperty({ description: 'The public key as an SPKI PEM.', example: EXAMPLE_PUBLIC_KEY })
  publicKey!: string;
  @ApiProperty({ description: '"ed25519:" and the first 16 hex digits of SHA-256 of the 32 key bytes.', example: 'ed25519:3f2a9c0d41b7e6a5' })
  fingerprint!: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_PUBLISHED_AT })
  createdAt!: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'Releases signed by a revoked key are paused, and none can be published with it.', example: null })
  revokedAt!: string | null;

  static from(key: FirmwareSigningKey): SigningKeyResponse {
    return { keyId: key.keyId, publicKey: publicKeyPem(key.publicKey), fingerprint: key.fingerprint, createdAt: key.createdAt.toISOString(), revokedAt: key.revokedAt?.toISOString() ?? null };
  }
}

export class SigningKeyListResponse {
  @ApiProperty({ type: [SigningKeyResponse], description: 'Newest first, revoked ones included.' })
  items!: SigningKeyResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null })
  nextCursor!: string | null;
}

export class ListSigningKeysQuery extends PageQuery(100) {}

export class RevokedSigningKeyResponse extends SigningKeyResponse {
  @ApiProperty({ type: [String], format: 'uuid', description: 'The releases this revocation paused (none when the key was revoked already).', example: [EXAMPLE_RELEASE_ID] })
  pausedReleaseIds!: string[];
}
