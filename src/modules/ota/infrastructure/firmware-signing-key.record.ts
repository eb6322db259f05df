import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/** A public key of the firmware team: releases signed by it verify against it (domain/firmware-manifest.ts). */
@Entity({ name: 'firmware_signing_keys' })
@Check('firmware_signing_keys_public_key_check', 'octet_length(public_key) = 32')
export class FirmwareSigningKeyRecord {
  @PrimaryColumn({ name: 'key_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'firmware_signing_keys_pkey' })
  keyId!: string;

  /** The raw 32 bytes of the Ed25519 key. */
  @Column({ name: 'public_key', type: 'bytea' })
  publicKey!: Buffer;

  @Column({ type: 'varchar', length: 32 })
  fingerprint!: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
