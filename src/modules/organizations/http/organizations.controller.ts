import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { AuditEntryResponse, AuditPageQuery, AuditPageResponse, AuditService, Requester, type AuditContext } from '../../audit/index.js';
import { OrganizationsService } from '../application/organizations.service.js';
import {
  ChangeMemberRequest,
  CreateOrganizationRequest,
  InviteMemberRequest,
  MemberListQuery,
  MemberListResponse,
  MemberResponse,
  OrganizationListQuery,
  OrganizationListResponse,
  OrganizationResponse,
  TransferOrganizationRequest,
  UpdateOrganizationRequest,
} from './organizations.dto.js';

/** The organizationId path parameter as the document shows it, for every route under /organizations/{organizationId}. */
export const ORGANIZATION_ID = { name: 'organizationId', format: 'uuid', example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d' } as const;
const MEMBER_ID = { name: 'memberId', format: 'uuid', example: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5' } as const;

/**
 * Organizations and their members, for a signed-in customer. Whoever is not a member gets the 404
 * of an organization that does not exist; a member whose role does not allow a change gets 403
 * ORGANIZATION_ROLE.
 */
@ApiTags('organizations')
@Controller('organizations')
export class OrganizationsController {
  constructor(
    private readonly organizations: OrganizationsService,
    private readonly auditLog: AuditService,
  ) {}

  @Post()
  @CustomerAuth()
  @ApiOperation({ operationId: 'createOrganization', summary: 'Create an organization, with you as its owner' })
  @ApiBody({ type: CreateOrganizationRequest })
  @ApiResponse({ status: 201, type: OrganizationResponse, description: 'Created.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async create(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @Body() body: CreateOrganizationRequest): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.create(customer.userId, body.name, by));
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({
    operationId: 'listOrganizations',
    summary: 'The organizations you are a member of, with your role, oldest first',
    description: 'Your personal organization among them. Keyset-paginated on (createdAt, organizationId), like every list.',
  })
  @ApiResponse({ status: 200, type: OrganizationListResponse, description: 'A page of your organizations.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: OrganizationListQuery): Promise<OrganizationListResponse> {
    const page = await this.organizations.listMine(customer.userId, query.limit ?? 50, query.cursor);
    return { items: page.items.map(OrganizationResponse.from), nextCursor: page.nextCursor };
  }

  @Get(':organizationId/audit')
  @CustomerAuth()
  @ApiOperation({
    operationId: 'listOrganizationAudit',
    summary: "Who changed what in the organization and on its devices, newest first",
    description:
      "Owners and admins (another member gets 403 ORGANIZATION_ROLE, anyone else 404). The entries of the organization's devices while it owned them, whoever acted (its members, its API keys — actor kind `organization` —, an administrator, whose account and address are not shown), and those about the organization itself: members invited, changed and removed, keys created and revoked. They stay when the member who acted leaves. Keyset-paginated on the entry's sequence.",
  })
  @ApiParam(ORGANIZATION_ID)
  @ApiResponse({ status: 200, type: AuditPageResponse, description: 'A page of entries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'] })
  async audit(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('organizationId', 'an organization id') organizationId: string, @Query() query: AuditPageQuery): Promise<AuditPageResponse> {
    await this.organizations.administered(customer.userId, organizationId);
    const page = await this.auditLog.forOrganization(organizationId, query.limit ?? 50, query.cursor);
    return { items: page.items.map(AuditEntryResponse.from), nextCursor: page.nextCursor };
  }

  @Get(':organizationId')
  @CustomerAuth()
  @ApiOperation({ operationId: 'getOrganization', summary: 'An organization you are a member of' })
  @ApiParam(ORGANIZATION_ID)
  @ApiResponse({ status: 200, type: OrganizationResponse, description: 'The organization, with your role.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async get(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('organizationId', 'an organization id') organizationId: string): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.get(customer.userId, organizationId));
  }

  @Patch(':organizationId')
  @CustomerAuth()
  @ApiOperation({ operationId: 'updateOrganization', summary: 'Rename an organization (owners and admins)' })
  @ApiParam(ORGANIZATION_ID)
  @ApiBody({ type: UpdateOrganizationRequest })
  @ApiResponse({ status: 200, type: OrganizationResponse, description: 'Renamed.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'] })
  async update(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Body() body: UpdateOrganizationRequest,
  ): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.rename(customer.userId, organizationId, body.name, by));
  }

  @Delete(':organizationId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'deleteOrganization', summary: 'Delete an organization (owners); not your personal one, nor one that owns devices', description: 'Its memberships and invitations go with it. An organization that owns devices is 409 ORGANIZATION_NOT_EMPTY: release them first.' })
  @ApiParam(ORGANIZATION_ID)
  @ApiResponse({ status: 204, description: 'Deleted.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION', 'ORGANIZATION_NOT_EMPTY'] })
  async delete(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @UuidParam('organizationId', 'an organization id') organizationId: string): Promise<void> {
    await this.organizations.delete(customer.userId, organizationId, by);
  }

  @Post(':organizationId/transfer')
  @HttpCode(200)
  @CustomerAuth()
  @ApiOperation({ operationId: 'transferOrganization', summary: 'Make another member an owner, and yourself an admin (owners; not a personal organization)' })
  @ApiParam(ORGANIZATION_ID)
  @ApiBody({ type: TransferOrganizationRequest })
  @ApiResponse({ status: 200, type: OrganizationResponse, description: 'Transferred: the organization with your new role.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION'] })
  async transfer(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Body() body: TransferOrganizationRequest,
  ): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.transfer(customer.userId, organizationId, body.memberId, by));
  }

  @Post(':organizationId/members')
  @CustomerAuth()
  @ApiOperation({
    operationId: 'inviteOrganizationMember',
    summary: 'Invite an e-mail address with a role (owners and admins), or change the role of its membership',
    description:
      'The same answer whether the address has an account or not: an invitation to an address without a verified account counts once that account is verified. Inviting an address again changes its role (200). Only an owner may invite an owner.',
  })
  @ApiParam(ORGANIZATION_ID)
  @ApiBody({ type: InviteMemberRequest })
  @ApiResponse({ status: 201, type: MemberResponse, description: 'Invited.' })
  @ApiResponse({ status: 200, type: MemberResponse, description: 'The address was a member already: its role is now the one given.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['LAST_OWNER', 'PERSONAL_ORGANIZATION'] })
  async invite(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Body() body: InviteMemberRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<MemberResponse> {
    const { member, created } = await this.organizations.invite(customer.userId, organizationId, body.email, body.role, by);
    if (!created) void reply.status(200);
    return MemberResponse.from(member);
  }

  @Get(':organizationId/members')
  @CustomerAuth()
  @ApiOperation({ operationId: 'listOrganizationMembers', summary: 'The members and invitations of an organization you are a member of, oldest first', description: 'Keyset-paginated on (invitedAt, memberId).' })
  @ApiParam(ORGANIZATION_ID)
  @ApiResponse({ status: 200, type: MemberListResponse, description: 'A page of members.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async members(
    @CurrentCustomer() customer: CustomerPrincipal,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Query() query: MemberListQuery,
  ): Promise<MemberListResponse> {
    const page = await this.organizations.members(customer.userId, organizationId, query.limit ?? 50, query.cursor);
    return { items: page.items.map(MemberResponse.from), nextCursor: page.nextCursor };
  }

  @Patch(':organizationId/members/:memberId')
  @CustomerAuth()
  @ApiOperation({
    operationId: 'updateOrganizationMember',
    summary: "Change a member's role (owners and admins; owners are made and unmade by owners), or your own alert e-mails",
    description: "At least one of role and alertEmails. alertEmails of another member's membership is a 403 ORGANIZATION_ROLE: each member chooses their own.",
  })
  @ApiParam(ORGANIZATION_ID)
  @ApiParam(MEMBER_ID)
  @ApiBody({ type: ChangeMemberRequest })
  @ApiResponse({ status: 200, type: MemberResponse, description: 'The member as changed.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['LAST_OWNER', 'PERSONAL_ORGANIZATION'] })
  async changeMember(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @UuidParam('memberId', 'a member id') memberId: string,
    @Body() body: ChangeMemberRequest,
  ): Promise<MemberResponse> {
    if (body.role === undefined && body.alertEmails === undefined) throw new ValidationFailedError([{ field: '(root)', message: 'name at least one of role, alertEmails' }]);
    return MemberResponse.from(await this.organizations.changeMember(customer.userId, organizationId, memberId, body, by));
  }

  @Delete(':organizationId/members/:memberId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({
    operationId: 'removeOrganizationMember',
    summary: 'Remove a member, or leave with your own memberId',
    description: 'Owners remove anyone, admins anyone but owners, every member themself. The last owner cannot leave; the account of a personal organization stays in it.',
  })
  @ApiParam(ORGANIZATION_ID)
  @ApiParam(MEMBER_ID)
  @ApiResponse({ status: 204, description: 'Removed: they see the organization no more.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['LAST_OWNER', 'PERSONAL_ORGANIZATION'] })
  async remove(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @UuidParam('memberId', 'a member id') memberId: string,
  ): Promise<void> {
    await this.organizations.remove(customer.userId, organizationId, memberId, by);
  }
}
