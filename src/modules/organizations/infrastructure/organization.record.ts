import { Column, Entity, ForeignKey, PrimaryColumn, Unique } from 'typeorm';

/** An organization: a company's or a household's fleet. A personal one has its account's id. */
@Entity({ name: 'organizations' })
@Unique('organizations_personal_of_key', ['personalOf'])
export class OrganizationRecord {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'organizations_pkey' })
  organizationId!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  /** The account whose personal organization this is (its id is the account's); it goes with the account. */
  @Column({ name: 'personal_of', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'organizations_personal_of_fkey', onDelete: 'CASCADE' })
  personalOf!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
