import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** Every claim, release and failed attempt: who, which device, when, outcome, from where. */
@Entity({ name: 'claim_audit' })
@Index('claim_audit_device_idx', ['deviceId', 'at'])
export class ClaimAuditRecord {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'claim_audit_pkey' })
  id!: string;

  @Column({ type: 'timestamptz' })
  at!: Date;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  deviceId!: string;

  @Column({ type: 'varchar', length: 20 })
  action!: string;

  @Column({ type: 'varchar', length: 40 })
  outcome!: string;

  @Column({ name: 'client_address', type: 'varchar', length: 64 })
  clientAddress!: string;
}
