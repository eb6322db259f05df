import { Module } from '@nestjs/common';
import { DevicesModule } from '../devices/devices.module.js';
import { FirmwareReleasesService } from './application/firmware-releases.service.js';
import { OtaMaintenance } from './application/ota-maintenance.js';
import { OtaService } from './application/ota.service.js';
import { AdminFirmwareController } from './http/admin-firmware.controller.js';
import { OtaController } from './http/ota.controller.js';
import { SqlFirmwareReleases } from './infrastructure/sql-firmware-releases.js';
import { SqlOtaEvents } from './infrastructure/sql-ota-events.js';

@Module({
  imports: [DevicesModule],
  controllers: [OtaController, AdminFirmwareController],
  providers: [OtaService, FirmwareReleasesService, OtaMaintenance, SqlFirmwareReleases, SqlOtaEvents],
  exports: [OtaService],
})
export class OtaModule {}
