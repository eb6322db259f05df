import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { ACCOUNT_SUMMARIES } from '../../accounts/sql-api.js';
import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
import type { Webhook } from '../domain/webhook.js';
import { WebhookStore } from '../domain/webhook.store.js';

interface WebhookRow {
  webhook_id: string;
  user_id: string | null;
  organization_id: string | null;
  url: string;
  types: string[] | null;
  enabled: boolean;
  created_at: Date;
  failing_since: Date | null;
  disabled_at: Date | null;
  secret_sealed: string;
}

const COLUMNS = 'w.webhook_id, w.user_id, w.organization_id, w.url, w.types, w.enabled, w.created_at, w.failing_since, w.disabled_at, w.secret_sealed';

/** The column naming the holder: both are uuid columns of webhooks, so the statements differ only in it. */
const holderColumn = (holder: IntegrationHolder): string => (holder.kind === 'user' ? 'user_id' : 'organization_id');

const toWebhook = (row: WebhookRow): Webhook => ({
  webhookId: row.webhook_id,
  holder: row.user_id !== null ? { kind: 'user', id: row.user_id } : { kind: 'organization', id: row.organization_id! },
  url: row.url,
  types: row.types,
  enabled: row.enabled,
  createdAt: row.created_at,
  failingSince: row.failing_since,
  disabledAt: row.disabled_at,
});

@Injectable()
export class SqlWebhookStore extends WebhookStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  async insert(webhook: Webhook, secretSealed: string, max: number): Promise<boolean> {
    return this.sql.transaction(async (tx) => {
      // The holder locked (an account's row; an organization's id, whose table is another module's):
      // two concurrent registrations cannot both pass the count.
      const { holder } = webhook;
      const lock = holder.kind === 'user' ? `SELECT 1 FROM ${ACCOUNT_SUMMARIES} WHERE user_id = $1 FOR UPDATE` : "SELECT pg_advisory_xact_lock(hashtext('webhooks'), hashtext($1))";
      await tx.rows(lock, [holder.id]);
      const [{ count }] = await tx.rows<{ count: number }>(`SELECT count(*)::int AS count FROM webhooks WHERE ${holderColumn(holder)} = $1`, [holder.id]);
      if (count >= max) return false;
      await tx.rows(
        'INSERT INTO webhooks (webhook_id, user_id, organization_id, url, types, secret_sealed, enabled, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [
          webhook.webhookId,
          holder.kind === 'user' ? holder.id : null,
          holder.kind === 'organization' ? holder.id : null,
          webhook.url,
          webhook.types,
          secretSealed,
          webhook.enabled,
          webhook.createdAt,
        ],
      );
      return true;
    });
  }

  async listOf(holder: IntegrationHolder): Promise<Webhook[]> {
    return (await this.sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks w WHERE w.${holderColumn(holder)} = $1 ORDER BY w.created_at, w.webhook_id`, [holder.id])).map(toWebhook);
  }

  async find(webhookId: string): Promise<(Webhook & { secretSealed: string }) | null> {
    const [row] = await this.sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks w WHERE w.webhook_id = $1`, [webhookId]);
    return row ? { ...toWebhook(row), secretSealed: row.secret_sealed } : null;
  }

  async delete(webhookId: string, holder: IntegrationHolder): Promise<boolean> {
    return (await this.sql.rows(`DELETE FROM webhooks WHERE webhook_id = $1 AND ${holderColumn(holder)} = $2 RETURNING 1`, [webhookId, holder.id])).length === 1;
  }

  async recipientsOf(ownerId: string | null): Promise<Webhook[]> {
    const rows = await this.sql.rows<WebhookRow>(
      `SELECT ${COLUMNS} FROM webhooks w LEFT JOIN ${ACCOUNT_SUMMARIES} u ON u.user_id = w.user_id
        WHERE w.enabled AND (w.user_id = $1::uuid OR w.organization_id = $1::uuid OR u.role = 'admin') ORDER BY w.webhook_id`,
      [ownerId],
    );
    return rows.map(toWebhook);
  }

  async markSucceeded(webhookId: string): Promise<void> {
    await this.sql.rows('UPDATE webhooks SET failing_since = NULL WHERE webhook_id = $1 AND failing_since IS NOT NULL', [webhookId]);
  }

  async markFailed(webhookId: string, now: Date): Promise<Date | null> {
    const [row] = await this.sql.rows<{ failing_since: Date }>('UPDATE webhooks SET failing_since = COALESCE(failing_since, $2) WHERE webhook_id = $1 RETURNING failing_since', [webhookId, now]);
    return row?.failing_since ?? null;
  }

  async disable(webhookId: string, now: Date): Promise<boolean> {
    return (await this.sql.rows('UPDATE webhooks SET enabled = false, disabled_at = $2 WHERE webhook_id = $1 AND enabled RETURNING 1', [webhookId, now])).length === 1;
  }
}
