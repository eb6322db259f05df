/** The notifications module's public surface: what other modules and the composition root may import. */
export { NotificationsModule } from './notifications.module.js';
export { webhookDocumentation } from './http/webhooks.openapi.js';
import { PendingNotificationRecord, WebhookRecord } from './infrastructure/notification.records.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const NOTIFICATIONS_RECORDS = [WebhookRecord, PendingNotificationRecord];
