import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { CrashesModule } from '../crashes/index.js';
import { DevicesModule } from '../devices/index.js';
import { SharingModule } from '../sharing/index.js';
import { EventsModule } from '../events/index.js';
import { TelemetryModule } from '../telemetry/index.js';
import { AlertMonitor } from './application/alert-monitor.js';
import { AlertRules } from './application/alert-rules.service.js';
import { AlertTransitions } from './application/alert-transitions.js';
import { AlertsService } from './application/alerts.service.js';
import { CrashLoopWatch } from './application/crash-loop-watch.js';
import { AlertStore } from './domain/alert.store.js';
import { AdminAlertRulesController } from './http/admin-alert-rules.controller.js';
import { DashboardAlertsController } from './http/dashboard-alerts.controller.js';
import { SqlAlertStore } from './infrastructure/sql-alert-store.js';

/** Alerts: rules per device and fleet defaults, evaluated on stored telemetry and on crash reports (crash loops). */
@Module({
  imports: [AuditModule, CrashesModule, DevicesModule, EventsModule, TelemetryModule, SharingModule],
  controllers: [DashboardAlertsController, AdminAlertRulesController],
  providers: [AlertMonitor, AlertRules, AlertTransitions, AlertsService, CrashLoopWatch, { provide: AlertStore, useClass: SqlAlertStore }],
  exports: [AlertMonitor, AlertsService],
})
export class AlertsModule {}
