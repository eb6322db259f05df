import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { OrganizationsModule } from '../organizations/index.js';
import { DeviceAccess } from './application/device-access.js';
import { SharingService } from './application/sharing.service.js';
import { DeviceGrantQueries } from './domain/device-grant.queries.js';
import { ShareStore } from './domain/share.store.js';
import { SharingController } from './http/sharing.controller.js';
import { SqlDeviceGrantQueries } from './infrastructure/sql-device-grant.queries.js';
import { SqlShareStore } from './infrastructure/sql-share.store.js';

/** Device sharing, and the one rule of who sees and changes a device (DeviceAccess; VISIBLE_DEVICES in SQL). */
@Module({
  imports: [AuditModule, OrganizationsModule],
  controllers: [SharingController],
  providers: [SharingService, DeviceAccess, { provide: ShareStore, useClass: SqlShareStore }, { provide: DeviceGrantQueries, useClass: SqlDeviceGrantQueries }],
  exports: [SharingService, DeviceAccess],
})
export class SharingModule {}
