import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Webhooks per customer and the events waiting for an owner's next e-mail digest. */
export class Notifications1764000200000 implements MigrationInterface {
  name = 'Notifications1764000200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE webhooks (
      webhook_id uuid NOT NULL CONSTRAINT webhooks_pkey PRIMARY KEY,
      user_id uuid NOT NULL CONSTRAINT webhooks_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      url text NOT NULL,
      types text[],
      secret_sealed text NOT NULL,
      enabled boolean NOT NULL,
      created_at timestamptz NOT NULL,
      failing_since timestamptz,
      disabled_at timestamptz
    )`);
    await queryRunner.query('CREATE INDEX webhooks_user_idx ON webhooks (user_id)');
    await queryRunner.query(`CREATE TABLE pending_notifications (
      user_id uuid NOT NULL CONSTRAINT pending_notifications_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      event_id bigint NOT NULL CONSTRAINT pending_notifications_event_id_fkey REFERENCES device_events (id) ON DELETE CASCADE,
      CONSTRAINT pending_notifications_pkey PRIMARY KEY (user_id, event_id)
    )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE pending_notifications');
    await queryRunner.query('DROP TABLE webhooks');
  }
}
