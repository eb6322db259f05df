import { Module } from '@nestjs/common';
import { EventsModule } from '../events/index.js';
import { OtaModule } from '../ota/index.js';
import { SharingModule } from '../sharing/index.js';
import { CrashesService } from './application/crashes.service.js';
import { CrashStore } from './domain/crash.store.js';
import { CrashesController } from './http/crashes.controller.js';
import { SqlCrashStore } from './infrastructure/sql-crash.store.js';

/** Crash reports and reboot reasons: reported by gateways, grouped fleet-wide by signature, read by owners and administrators. */
@Module({
  imports: [EventsModule, SharingModule, OtaModule],
  controllers: [CrashesController],
  providers: [CrashesService, { provide: CrashStore, useClass: SqlCrashStore }],
  exports: [CrashesService],
})
export class CrashesModule {}
