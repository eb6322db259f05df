/** The alerts module's public surface: what other modules and the composition root may import. */
export { AlertsModule } from './alerts.module.js';
export { AlertMonitor } from './application/alert-monitor.js';
export { AlertsService } from './application/alerts.service.js';
export type { UnresolvedAlerts } from './domain/alert.store.js';
import { AlertRecord, AlertRuleDefaultsRecord, AlertRuleSetRecord, AlertSeriesRecord } from './infrastructure/alert.records.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const ALERTS_RECORDS = [AlertRuleSetRecord, AlertRuleDefaultsRecord, AlertSeriesRecord, AlertRecord];
