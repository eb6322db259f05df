import { OrganizationsModule } from '../organizations/index.js';
import { Module } from '@nestjs/common';
import { Env } from '../../config/env.js';
import { Secrets } from '../../config/secrets.js';
import { AccountsModule } from '../accounts/index.js';
import { EventsModule } from '../events/index.js';
import { DeliveriesService } from './application/deliveries.service.js';
import { NotificationMails } from './application/notification-mails.js';
import { WebhookDeliveries } from './application/webhook-deliveries.js';
import { WebhooksService } from './application/webhooks.service.js';
import { PendingNotificationStore } from './domain/pending-notification.store.js';
import { WebhookStore } from './domain/webhook.store.js';
import { WebhookSecrets, WebhookTransport } from './domain/webhook-transport.js';
import { AdminDeliveriesController } from './http/admin-deliveries.controller.js';
import { OrganizationWebhooksController } from './http/organization-webhooks.controller.js';
import { UserWebhooksController } from './http/user-webhooks.controller.js';
import { HttpWebhookTransport } from './infrastructure/http-webhook-transport.js';
import { SealedWebhookSecrets } from './infrastructure/sealed-webhook-secrets.js';
import { SecretBox } from './infrastructure/secret-box.js';
import { SqlPendingNotificationStore } from './infrastructure/sql-pending-notification.store.js';
import { SqlWebhookStore } from './infrastructure/sql-webhook.store.js';
import { WebhookHttpClient } from './infrastructure/webhook-http-client.js';

/** What the service tells people and systems outside: alert e-mails, webhooks, and the deliveries that failed. */
@Module({
  imports: [AccountsModule, EventsModule, OrganizationsModule],
  controllers: [AdminDeliveriesController, UserWebhooksController, OrganizationWebhooksController],
  providers: [
    DeliveriesService,
    NotificationMails,
    WebhookDeliveries,
    WebhooksService,
    { provide: WebhookSecrets, inject: [Secrets], useFactory: (secrets: Secrets) => new SealedWebhookSecrets(new SecretBox(secrets.pepper, 'webhook-secrets')) },
    { provide: WebhookTransport, inject: [Env], useFactory: (env: Env) => new HttpWebhookTransport(new WebhookHttpClient({ allowPrivateTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS })) },
    { provide: WebhookStore, useClass: SqlWebhookStore },
    { provide: PendingNotificationStore, useClass: SqlPendingNotificationStore },
  ],
})
export class NotificationsModule {}
