import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An organization: a company's or a household's fleet. A personal one has its account's id. */
@Entity({ name: 'organizations' })
export class OrganizationRecord {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'organizations_pkey' })
  organizationId!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  @Column({ type: 'boolean' })
  personal!: boolean;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
