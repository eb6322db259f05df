import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { DevicesModule } from '../devices/index.js';
import { EventsModule } from '../events/index.js';
import { TelemetryModule } from '../telemetry/index.js';
import { FirmwareReleasesService } from './application/firmware-releases.service.js';
import { FirmwareSymbols } from './application/firmware-symbols.js';
import { FirmwareSymbolStore } from './domain/firmware-symbol.store.js';
import { SqlFirmwareSymbolStore } from './infrastructure/sql-firmware-symbol.store.js';
import { OtaMaintenance } from './application/ota-maintenance.js';
import { OtaService } from './application/ota.service.js';
import { FirmwareReleaseRepository } from './domain/firmware-release.repository.js';
import { OtaDevices } from './domain/ota-devices.js';
import { BatteryReadingsQueries } from './domain/battery-readings.queries.js';
import { SqlBatteryReadingsQueries } from './infrastructure/sql-battery-readings.queries.js';
import { OtaEventStore } from './domain/ota-event.store.js';
import { ReleaseOfferStore } from './domain/release-offer.store.js';
import { AdminFirmwareController } from './http/admin-firmware.controller.js';
import { SigningKeysController } from './http/signing-keys.controller.js';
import { FirmwareDownloadController } from './http/firmware-download.controller.js';
import { FirmwareImages } from './application/firmware-images.js';
import { FirmwareImageStore } from './domain/firmware-image.store.js';
import { SqlFirmwareImageStore } from './infrastructure/sql-firmware-image.store.js';
import { FirmwareSigningKeysService } from './application/firmware-signing-keys.service.js';
import { FirmwareSigningKeyStore } from './domain/firmware-signing-key.store.js';
import { SqlFirmwareSigningKeyStore } from './infrastructure/sql-firmware-signing-key.store.js';
import { OtaController } from './http/ota.controller.js';
import { SnapshotOtaDevices } from './infrastructure/snapshot-ota-devices.js';
import { SqlOtaEventStore } from './infrastructure/sql-ota-event.store.js';
import { SqlReleaseOfferStore } from './infrastructure/sql-release-offer.store.js';
import { TypeOrmFirmwareReleaseRepository } from './infrastructure/typeorm-firmware-release.repository.js';

@Module({
  imports: [AuditModule, DevicesModule, EventsModule, TelemetryModule],
  controllers: [OtaController, AdminFirmwareController, SigningKeysController, FirmwareDownloadController],
  providers: [
    OtaService,
    FirmwareReleasesService,
    FirmwareSymbols,
    FirmwareSigningKeysService,
    FirmwareImages,
    OtaMaintenance,
    { provide: FirmwareSymbolStore, useClass: SqlFirmwareSymbolStore },
    { provide: FirmwareSigningKeyStore, useClass: SqlFirmwareSigningKeyStore },
    { provide: FirmwareImageStore, useClass: SqlFirmwareImageStore },
    { provide: FirmwareReleaseRepository, useClass: TypeOrmFirmwareReleaseRepository },
    { provide: ReleaseOfferStore, useClass: SqlReleaseOfferStore },
    { provide: OtaEventStore, useClass: SqlOtaEventStore },
    { provide: OtaDevices, useClass: SnapshotOtaDevices },
    { provide: BatteryReadingsQueries, useClass: SqlBatteryReadingsQueries },
  ],
  exports: [OtaService, FirmwareSymbols],
})
export class OtaModule {}
