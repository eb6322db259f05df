import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dashboard stream: single-use tickets for EventSource, the index a resumed stream
 * reads its owner's missed events by, and a trigger that names new events on LISTEN/NOTIFY when
 * their transaction commits, whichever instance or statement recorded them. Ids go in pieces of
 * 300 (NOTIFY takes at most 8000 bytes), one notification per piece per statement.
 */
export class LiveStream1764000300000 implements MigrationInterface {
  name = 'LiveStream1764000300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE stream_tickets (
      ticket_hash varchar(64) NOT NULL CONSTRAINT stream_tickets_pkey PRIMARY KEY,
      user_id uuid NOT NULL CONSTRAINT stream_tickets_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      session_id uuid NOT NULL,
      token_version integer NOT NULL,
      expires_at timestamptz NOT NULL
    )`);
    await queryRunner.query('CREATE INDEX stream_tickets_expires_idx ON stream_tickets (expires_at)');
    await queryRunner.query('CREATE INDEX device_events_owner_idx ON device_events (owner_id, id)');
    await queryRunner.query(`CREATE FUNCTION device_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('device_cloud_events', string_agg(id::text, ','))
          FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / 300 AS piece FROM inserted) numbered
         GROUP BY piece;
        RETURN NULL;
      END
    $$`);
    await queryRunner.query(
      'CREATE TRIGGER device_events_notify AFTER INSERT ON device_events REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION device_events_notify()',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER device_events_notify ON device_events');
    await queryRunner.query('DROP FUNCTION device_events_notify()');
    await queryRunner.query('DROP INDEX device_events_owner_idx');
    await queryRunner.query('DROP TABLE stream_tickets');
  }
}
