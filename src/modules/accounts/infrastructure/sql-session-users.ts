import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { User, type Role } from '../domain/user.js';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  role: Role;
  email_verified_at: Date | null;
  token_version: number;
  created_at: Date;
  alert_emails: boolean;
}

/** The columns of UserRow. */
export const USER_COLUMNS = 'id, email, password_hash, role, email_verified_at, token_version, created_at, alert_emails';

export function toUser(row: UserRow): User {
  return User.restore({
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    role: row.role,
    emailVerifiedAt: row.email_verified_at,
    tokenVersion: row.token_version,
    createdAt: row.created_at,
    alertEmails: row.alert_emails,
  });
}

/**
 * The customer guard's one read per request (every dashboard call: S3 in bench/README.md, whose
 * baseline sends the same text, bench/sql-parity.ts): measured SQL, a statement prepared once per
 * connection. The session check rides along on the partial index user_refresh_tokens_live_family_idx.
 */
@Injectable()
export class SqlSessionUsers {
  constructor(private readonly sql: Sql) {}

  async find(id: string, sessionId: string): Promise<User | null> {
    const rows = await this.sql.rows<UserRow>(
      `SELECT id, email, password_hash, role, email_verified_at, token_version, created_at, alert_emails FROM users
        WHERE id = $1 AND EXISTS (SELECT 1 FROM user_refresh_tokens t WHERE t.family_id = $2 AND t.user_id = users.id AND t.revoked_at IS NULL)`,
      [id, sessionId],
      'user_in_session',
    );
    const row = rows[0];
    return row ? toUser(row) : null;
  }
}
