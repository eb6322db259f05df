import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { StreamTicketStore, type StoredTicket } from '../domain/stream-ticket.store.js';

@Injectable()
export class SqlStreamTicketStore extends StreamTicketStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  async add(ticketHash: string, ticket: StoredTicket, now: Date): Promise<void> {
    await this.sql.rows(
      `WITH expired AS (DELETE FROM stream_tickets WHERE expires_at < $5)
       INSERT INTO stream_tickets (ticket_hash, user_id, session_id, token_version, expires_at) VALUES ($1, $2, $3, $4, $6)`,
      [ticketHash, ticket.userId, ticket.sessionId, ticket.tokenVersion, now, ticket.expiresAt],
    );
  }

  async take(ticketHash: string): Promise<StoredTicket | null> {
    const [row] = await this.sql.rows<{ user_id: string; session_id: string; token_version: number; expires_at: Date }>(
      'DELETE FROM stream_tickets WHERE ticket_hash = $1 RETURNING user_id, session_id, token_version, expires_at',
      [ticketHash],
    );
    return row ? { userId: row.user_id, sessionId: row.session_id, tokenVersion: row.token_version, expiresAt: row.expires_at } : null;
  }
}
