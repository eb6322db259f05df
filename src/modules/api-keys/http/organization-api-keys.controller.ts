import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ORGANIZATION_ID_PARAM, OrganizationsService } from '../../organizations/index.js';
import { ApiKeysService } from '../application/api-keys.service.js';
import { MAX_API_KEYS_PER_USER, type ApiKeyHolder } from '../domain/api-key.js';
import { ApiKeyListResponse, ApiKeyResponse, ApiKeysQuery, CreateApiKeyRequest, CreatedApiKeyResponse } from './api-keys.dto.js';

/** Who may manage them, and what a non-member, a member below admin and a personal organization get. */
const MANAGERS = 'Owners and admins of the organization; another member gets 403 ORGANIZATION_ROLE, anyone else 404. A personal organization has no keys of its own (409 PERSONAL_ORGANIZATION): its account\'s keys are at /api/v1/user/api-keys.';

/**
 * An organization's API keys: they act as the organization, on its devices and on those shared
 * with it, and stay when the member who made them leaves. Managed with a signed-in session only.
 */
@ApiTags('organizations')
@Controller('organizations/:organizationId/api-keys')
export class OrganizationApiKeysController {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly organizations: OrganizationsService,
  ) {}

  @Post()
  @CustomerAuth()
  @NoStore()
  @ApiOperation({
    operationId: 'createOrganizationApiKey',
    summary: "Create an API key of the organization's, for an integration that must outlive any one member",
    description: `The key is shown only in this answer. It acts as the organization: it sees the organization's devices (as an admin does) and the devices shared with the organization, nothing of its members' own, and is accepted where an operation lists the apiKey security scheme, by its scope as an account's key. Its audit entries name the actor kind \`organization\`. ${MANAGERS} At most ${MAX_API_KEYS_PER_USER} per organization.`,
  })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiBody({ type: CreateApiKeyRequest })
  @ApiResponse({ status: 201, type: CreatedApiKeyResponse, description: 'Created; the key is shown only here.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['TOO_MANY_API_KEYS', 'PERSONAL_ORGANIZATION'] })
  async create(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Body() body: CreateApiKeyRequest,
  ): Promise<CreatedApiKeyResponse> {
    const { apiKey, key } = await this.apiKeys.create(await this.managed(customer, organizationId), body.name, body.scope, by);
    return CreatedApiKeyResponse.from(apiKey, key);
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({ operationId: 'listOrganizationApiKeys', summary: "The organization's API keys (without the keys themselves), newest first", description: `${MANAGERS} Keyset-paginated on (createdAt, keyId).` })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiResponse({ status: 200, type: ApiKeyListResponse, description: "A page of the organization's keys." })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('organizationId', 'an organization id') organizationId: string, @Query() query: ApiKeysQuery): Promise<ApiKeyListResponse> {
    const page = await this.apiKeys.list(await this.managed(customer, organizationId), query.limit ?? 50, query.cursor);
    return { items: page.items.map(ApiKeyResponse.from), nextCursor: page.nextCursor };
  }

  @Delete(':keyId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'deleteOrganizationApiKey', summary: "Revoke one of the organization's API keys: refused from the next request on, on every instance", description: MANAGERS })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiParam({ name: 'keyId', format: 'uuid' })
  @ApiResponse({ status: 204, description: 'Revoked.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION'] })
  async delete(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @UuidParam('keyId', 'an API key id') keyId: string,
  ): Promise<void> {
    await this.apiKeys.revoke(await this.managed(customer, organizationId), keyId, by);
  }

  private async managed(customer: CustomerPrincipal, organizationId: string): Promise<ApiKeyHolder> {
    await this.organizations.administering(customer.userId, organizationId, 'API keys');
    return { kind: 'organization', id: organizationId };
  }
}
