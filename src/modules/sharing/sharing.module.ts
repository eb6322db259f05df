import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { DeviceAccess } from './application/device-access.js';
import { SharingService } from './application/sharing.service.js';
import { DeviceGrants } from './domain/device-grants.js';
import { ShareStore } from './domain/share.store.js';
import { SharingController } from './http/sharing.controller.js';
import { SqlDeviceGrants } from './infrastructure/sql-device-grants.js';
import { SqlShareStore } from './infrastructure/sql-share.store.js';

/** Device sharing, and the one rule of who sees and changes a device (DeviceAccess; VISIBLE_DEVICES in SQL). */
@Module({
  imports: [AuditModule],
  controllers: [SharingController],
  providers: [SharingService, DeviceAccess, { provide: ShareStore, useClass: SqlShareStore }, { provide: DeviceGrants, useClass: SqlDeviceGrants }],
  exports: [SharingService, DeviceAccess],
})
export class SharingModule {}
