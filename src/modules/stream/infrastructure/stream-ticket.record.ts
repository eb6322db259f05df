import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** A stream ticket, by its HMAC (never the ticket): single use, deleted when redeemed. */
@Entity({ name: 'stream_tickets' })
@Index('stream_tickets_expires_idx', ['expiresAt'])
export class StreamTicketRecord {
  @PrimaryColumn({ name: 'ticket_hash', type: 'varchar', length: 64, primaryKeyConstraintName: 'stream_tickets_pkey' })
  ticketHash!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  @ForeignKey('users', { name: 'stream_tickets_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string;

  /** The session (refresh-token family) of the access token that asked for it. */
  @Column({ name: 'session_id', type: 'uuid' })
  sessionId!: string;

  @Column({ name: 'token_version', type: 'integer' })
  tokenVersion!: number;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
