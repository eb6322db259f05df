import { Module } from '@nestjs/common';
import { Secrets } from '../../config/secrets.js';
import { AccountsModule } from '../accounts/index.js';
import { EventsModule } from '../events/index.js';
import { DeliveriesService } from './application/deliveries.service.js';
import { NotificationMails } from './application/notification-mails.js';
import { WebhookDeliveries } from './application/webhook-deliveries.js';
import { WebhooksService } from './application/webhooks.service.js';
import { PendingNotifications } from './domain/pending-notifications.js';
import { WebhookStore } from './domain/webhook.store.js';
import { AdminDeliveriesController } from './http/admin-deliveries.controller.js';
import { UserWebhooksController } from './http/user-webhooks.controller.js';
import { SecretBox } from './infrastructure/secret-box.js';
import { SqlPendingNotifications } from './infrastructure/sql-pending-notifications.js';
import { SqlWebhookStore } from './infrastructure/sql-webhook.store.js';

/** What the service tells people and systems outside: alert e-mails, webhooks, and the deliveries that failed. */
@Module({
  imports: [AccountsModule, EventsModule],
  controllers: [AdminDeliveriesController, UserWebhooksController],
  providers: [
    DeliveriesService,
    NotificationMails,
    WebhookDeliveries,
    WebhooksService,
    { provide: SecretBox, inject: [Secrets], useFactory: (secrets: Secrets) => new SecretBox(secrets.pepper, 'webhook-secrets') },
    { provide: WebhookStore, useClass: SqlWebhookStore },
    { provide: PendingNotifications, useClass: SqlPendingNotifications },
  ],
})
export class NotificationsModule {}
