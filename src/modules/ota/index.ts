/** The ota module's public surface: what other modules and the composition root may import. */
export { OtaModule } from './ota.module.js';
export { OtaService } from './application/ota.service.js';
export { FirmwareSymbols } from './application/firmware-symbols.js';
export { OTA_EVENT_TYPES, type OtaEventType } from './domain/ota-event.js';
export { OtaHistoryItemResponse, OtaHistoryQuery, OtaHistoryResponse } from './http/ota-history.dto.js';
import { DeviceReleaseStateRecord } from './infrastructure/device-release-state.record.js';
import { FirmwareReleaseRecord } from './infrastructure/firmware-release.record.js';
import { FirmwareSymbolsRecord } from './infrastructure/firmware-symbols.record.js';
import { FirmwareSigningKeyRecord } from './infrastructure/firmware-signing-key.record.js';
import { FirmwareImageChunkRecord } from './infrastructure/firmware-image-chunk.record.js';
import { OtaEventRecord } from './infrastructure/ota-event.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const OTA_RECORDS = [FirmwareReleaseRecord, OtaEventRecord, DeviceReleaseStateRecord, FirmwareSymbolsRecord, FirmwareSigningKeyRecord, FirmwareImageChunkRecord];
