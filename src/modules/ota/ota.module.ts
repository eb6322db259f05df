import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { DevicesModule } from '../devices/index.js';
import { EventsModule } from '../events/index.js';
import { TelemetryModule } from '../telemetry/index.js';
import { FirmwareReleasesService } from './application/firmware-releases.service.js';
import { OtaMaintenance } from './application/ota-maintenance.js';
import { OtaService } from './application/ota.service.js';
import { FirmwareReleaseRepository } from './domain/firmware-release.repository.js';
import { OtaDevices } from './domain/ota-devices.js';
import { BatteryReadingsSource } from './domain/battery-guard.js';
import { SqlBatteryReadings } from './infrastructure/sql-battery-readings.js';
import { OtaEventStore } from './domain/ota-event.store.js';
import { ReleaseOffers } from './domain/release-offers.js';
import { AdminFirmwareController } from './http/admin-firmware.controller.js';
import { OtaController } from './http/ota.controller.js';
import { SnapshotOtaDevices } from './infrastructure/snapshot-ota-devices.js';
import { SqlOtaEvents } from './infrastructure/sql-ota-events.js';
import { SqlReleaseOffers } from './infrastructure/sql-release-offers.js';
import { TypeOrmFirmwareReleaseRepository } from './infrastructure/typeorm-firmware-release.repository.js';

@Module({
  imports: [AuditModule, DevicesModule, EventsModule, TelemetryModule],
  controllers: [OtaController, AdminFirmwareController],
  providers: [
    OtaService,
    FirmwareReleasesService,
    OtaMaintenance,
    { provide: FirmwareReleaseRepository, useClass: TypeOrmFirmwareReleaseRepository },
    { provide: ReleaseOffers, useClass: SqlReleaseOffers },
    { provide: OtaEventStore, useClass: SqlOtaEvents },
    { provide: OtaDevices, useClass: SnapshotOtaDevices },
    { provide: BatteryReadingsSource, useClass: SqlBatteryReadings },
  ],
  exports: [OtaService],
})
export class OtaModule {}
