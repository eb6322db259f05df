import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsIn, IsString, IsUUID, MaxLength, MinLength } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { ORGANIZATION_ROLES, type MyOrganization, type OrganizationMember, type OrganizationRole } from '../domain/organization.js';

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

const ROLES_DESCRIPTION =
  '`owner`: everything, deleting the organization and making or unmaking owners included. `admin`: its name and its members (owners excepted). `operator`: configures its devices, sends commands, acknowledges alerts. `viewer`: reads.';

export class OrganizationNameRequest {
  @ApiProperty({ example: 'Solar Installers Ltd', minLength: 1, maxLength: 100, description: 'Trimmed.' })
  @trimmed
  @IsString()
  @MinLength(1, { message: 'name must not be empty' })
  @MaxLength(100)
  name!: string;
}

export class CreateOrganizationRequest extends OrganizationNameRequest {}

export class UpdateOrganizationRequest extends OrganizationNameRequest {}

export class OrganizationResponse {
  @ApiProperty({ format: 'uuid', example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d' })
  organizationId!: string;

  @ApiProperty({ example: 'Solar Installers Ltd' })
  name!: string;

  @ApiProperty({ description: 'The organization every account has (its id is the account\'s): it cannot be deleted or transferred, and its account stays its owner.', example: false })
  personal!: boolean;

  @ApiProperty({ enum: ORGANIZATION_ROLES, example: 'owner', description: `Your role. ${ROLES_DESCRIPTION}` })
  role!: OrganizationRole;

  @ApiProperty({ format: 'uuid', example: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5', description: 'Your membership: remove it to leave.' })
  memberId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-12-06T09:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', example: '2026-12-06T09:00:00.000Z' })
  updatedAt!: string;

  static from(organization: MyOrganization): OrganizationResponse {
    return {
      organizationId: organization.organizationId,
      name: organization.name,
      personal: organization.personal,
      role: organization.role,
      memberId: organization.memberId,
      createdAt: organization.createdAt.toISOString(),
      updatedAt: organization.updatedAt.toISOString(),
    };
  }
}

export class OrganizationListQuery extends PageQuery(100) {}

export class OrganizationListResponse {
  @ApiProperty({ type: [OrganizationResponse], description: 'Your organizations, oldest first: your personal one among them.' })
  items!: OrganizationResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: null })
  nextCursor!: string | null;
}

export class InviteMemberRequest {
  @ApiProperty({ example: 'grace@example.com', maxLength: 254, format: 'email', description: 'Whom to invite. An address without a verified account becomes a member once an account with it is verified.' })
  @trimmed
  @IsString()
  @MaxLength(254)
  @IsEmail({}, { message: 'email must be an e-mail address' })
  email!: string;

  @ApiProperty({ enum: ORGANIZATION_ROLES, example: 'operator', description: `${ROLES_DESCRIPTION} Only an owner may invite an owner.` })
  @IsIn(ORGANIZATION_ROLES, { message: `role must be one of ${ORGANIZATION_ROLES.join(', ')}` })
  role!: OrganizationRole;
}

/** A role, alert e-mails, or both: at least one of them. */
export class ChangeMemberRequest {
  @ApiPropertyOptional({ enum: ORGANIZATION_ROLES, example: 'admin', description: `${ROLES_DESCRIPTION} Only an owner may make or unmake an owner; the last owner stays one.` })
  @Optional()
  @IsIn(ORGANIZATION_ROLES, { message: `role must be one of ${ORGANIZATION_ROLES.join(', ')}` })
  role?: OrganizationRole;

  @ApiPropertyOptional({
    example: false,
    description: "Your own membership only: whether you are mailed about the organization's devices (alerts, offline, failed updates). Owners, admins and operators are mailed unless they turn it off (and unless their account's alertEmails is off); viewers never are.",
  })
  @Optional()
  @IsBoolean()
  alertEmails?: boolean;
}

export class TransferOrganizationRequest {
  @ApiProperty({ format: 'uuid', example: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5', description: 'The member who becomes an owner; you become an admin.' })
  @IsUUID('all', { message: 'memberId must be a member id' })
  memberId!: string;
}

export class MemberResponse {
  @ApiProperty({ format: 'uuid', example: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5' })
  memberId!: string;

  @ApiProperty({ example: 'grace@example.com', description: 'Trimmed and lower-cased. The same whether the address has an account or not.' })
  email!: string;

  @ApiProperty({ enum: ORGANIZATION_ROLES, example: 'operator' })
  role!: OrganizationRole;

  @ApiProperty({ format: 'date-time', example: '2026-12-06T09:00:00.000Z' })
  invitedAt!: string;

  @ApiProperty({ example: true, description: "The member's own choice of alert e-mails about the organization's devices (viewers are never mailed)." })
  alertEmails!: boolean;

  static from(member: OrganizationMember): MemberResponse {
    return { memberId: member.memberId, email: member.email, role: member.role, invitedAt: member.invitedAt.toISOString(), alertEmails: member.alertEmails };
  }
}

export class MemberListQuery extends PageQuery(100) {}

export class MemberListResponse {
  @ApiProperty({ type: [MemberResponse], description: 'Members and invitations, oldest first.' })
  items!: MemberResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: null })
  nextCursor!: string | null;
}
