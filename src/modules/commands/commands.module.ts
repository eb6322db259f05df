import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { EventsModule } from '../events/index.js';
import { SharingModule } from '../sharing/index.js';
import { CommandWaiters } from './application/command-waiters.js';
import { CommandsService } from './application/commands.service.js';
import { ExpireCommand } from './application/expire-command.js';
import { GatewayCommandsService } from './application/gateway-commands.service.js';
import { CommandStore } from './domain/command.store.js';
import { DashboardCommandsController } from './http/dashboard-commands.controller.js';
import { DeviceCommandsController } from './http/device-commands.controller.js';
import { SqlCommandStore } from './infrastructure/sql-command.store.js';

/** Commands to gateways: sent from the dashboard, fetched by the gateways' polls (short or long), answered with a result. */
@Module({
  imports: [AuditModule, EventsModule, SharingModule],
  controllers: [DashboardCommandsController, DeviceCommandsController],
  providers: [CommandsService, GatewayCommandsService, CommandWaiters, ExpireCommand, { provide: CommandStore, useClass: SqlCommandStore }],
  exports: [CommandWaiters, CommandsService],
})
export class CommandsModule {}
