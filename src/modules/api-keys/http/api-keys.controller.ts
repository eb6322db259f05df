import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { ApiKeysService } from '../application/api-keys.service.js';
import { MAX_API_KEYS_PER_USER, type ApiKeyHolder } from '../domain/api-key.js';
import { ApiKeyListResponse, ApiKeyResponse, ApiKeysQuery, CreateApiKeyRequest, CreatedApiKeyResponse } from './api-keys.dto.js';

const accountOf = (customer: CustomerPrincipal): ApiKeyHolder => ({ kind: 'user', id: customer.userId });

/** Managed with a signed-in session only: no API key reaches these routes (a key cannot mint or revoke keys). */
@ApiTags('api-keys')
@Controller('user/api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @CustomerAuth()
  @NoStore()
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Create an API key for an integration (home automation, scripts)',
    description: `The key is shown only in this answer. Send it as \`Authorization: Bearer dck_…\` to the operations that list the apiKey security scheme: a \`read\` key on their reads, a \`write\` key also on the changes marked \`x-api-key-scope: write\`. A key never reaches account, key, webhook or admin operations, and acts as a customer even for an administrator. At most ${MAX_API_KEYS_PER_USER} per account.`,
  })
  @ApiBody({ type: CreateApiKeyRequest })
  @ApiResponse({ status: 201, type: CreatedApiKeyResponse, description: 'Created; the key is shown only here.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 409: ['TOO_MANY_API_KEYS'] })
  async create(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @Body() body: CreateApiKeyRequest): Promise<CreatedApiKeyResponse> {
    const { apiKey, key } = await this.apiKeys.create(accountOf(customer), body.name, body.scope, by);
    return CreatedApiKeyResponse.from(apiKey, key);
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({
    operationId: 'listApiKeys',
    summary: 'Your API keys (without the keys themselves), newest first',
    description: 'Keyset-paginated on (createdAt, keyId), like every list: pass `nextCursor` as `cursor` for the next page.',
  })
  @ApiResponse({ status: 200, type: ApiKeyListResponse, description: 'A page of your keys.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: ApiKeysQuery): Promise<ApiKeyListResponse> {
    const page = await this.apiKeys.list(accountOf(customer), query.limit ?? 50, query.cursor);
    return { items: page.items.map(ApiKeyResponse.from), nextCursor: page.nextCursor };
  }

  @Delete(':keyId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'deleteApiKey', summary: 'Revoke one of your API keys: it is refused from the next request on, on every instance' })
  @ApiParam({ name: 'keyId', format: 'uuid' })
  @ApiResponse({ status: 204, description: 'Revoked.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async delete(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @UuidParam('keyId', 'an API key id') keyId: string): Promise<void> {
    await this.apiKeys.revoke(accountOf(customer), keyId, by);
  }
}
