import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API keys for integrations: each by its keyed hash, looked up by it on every request
 * (api_keys_key_hash_key), and listed per account newest first (api_keys_user_idx). They go with
 * their account.
 */
export class ApiKeys1764000600000 implements MigrationInterface {
  name = 'ApiKeys1764000600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE api_keys (
      key_id uuid NOT NULL CONSTRAINT api_keys_pkey PRIMARY KEY,
      user_id uuid NOT NULL CONSTRAINT api_keys_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      name varchar(100) NOT NULL,
      scope varchar(5) NOT NULL CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'write')),
      key_hash varchar(64) NOT NULL,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz NULL
    )`);
    await queryRunner.query('CREATE UNIQUE INDEX api_keys_key_hash_key ON api_keys (key_hash)');
    await queryRunner.query('CREATE INDEX api_keys_user_idx ON api_keys (user_id, created_at, key_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE api_keys');
  }
}
