import { Column } from 'typeorm';

/**
 * Columns every refresh-token table has. Each subject's record declares its primary key `id` (uuid,
 * gen_random_uuid(); there, so that the constraint carries the table's name), maps `subjectId` to
 * its subject column (device_id, user_id) with the foreign key, and adds its indexes.
 */
export abstract class RefreshTokenColumns {
  abstract id: string;

  /** The device or user the token was issued to. */
  abstract subjectId: string;

  @Column({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash!: string;

  @Column({ name: 'token_version', type: 'integer' })
  tokenVersion!: number;

  /** The session: shared by the token a login issued and all its successors. */
  @Column({ name: 'family_id', type: 'uuid' })
  familyId!: string;

  @Column({ name: 'issued_at', type: 'timestamptz' })
  issuedAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'rotated_at', type: 'timestamptz', nullable: true })
  rotatedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
