import { Body, Controller, Delete, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { ORGANIZATION_ID_PARAM, OrganizationsService } from '../../organizations/index.js';
import { WebhooksService } from '../application/webhooks.service.js';
import { MAX_WEBHOOKS_PER_USER } from '../domain/webhook.js';
import { CreatedWebhookResponse, CreateWebhookRequest, WebhookResponse, WebhooksResponse, WebhookTestResponse } from './webhooks.dto.js';

/** Who may manage them, and what a non-member, a member below admin and a personal organization get. */
const MANAGERS = "Owners and admins of the organization; another member gets 403 ORGANIZATION_ROLE, anyone else 404. A personal organization has no webhooks of its own (409 PERSONAL_ORGANIZATION): its account's are at /api/v1/user/webhooks.";

/**
 * An organization's webhooks: the events of the organization's devices, delivered as an account's
 * are, and kept when the member who registered them leaves.
 */
@ApiTags('organizations')
@Controller('organizations/:organizationId/webhooks')
export class OrganizationWebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly organizations: OrganizationsService,
  ) {}

  @Post()
  @CustomerAuth()
  @NoStore()
  @ApiOperation({
    operationId: 'createOrganizationWebhook',
    summary: "Register a webhook for the events of the organization's devices",
    description: `Delivered like an account's webhooks (Standard Webhooks, at least once, retried for more than 24 h; see the webhooks section). A webhook failing for 24 h is disabled and the organization's owners and admins get an e-mail. ${MANAGERS} At most ${MAX_WEBHOOKS_PER_USER} per organization.`,
  })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiBody({ type: CreateWebhookRequest })
  @ApiResponse({ status: 201, type: CreatedWebhookResponse, description: 'Registered; the secret is shown only here.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['WEBHOOK_URL_NOT_ALLOWED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['TOO_MANY_WEBHOOKS', 'PERSONAL_ORGANIZATION'] })
  async create(
    @CurrentCustomer() customer: CustomerPrincipal,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @Body() body: CreateWebhookRequest,
  ): Promise<CreatedWebhookResponse> {
    const { webhook, secret } = await this.webhooks.create(await this.managed(customer, organizationId), body.url, body.types ?? null);
    return { ...WebhookResponse.from(webhook), secret };
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({ operationId: 'listOrganizationWebhooks', summary: "The organization's webhooks (without their secrets)", description: MANAGERS })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiResponse({ status: 200, type: WebhooksResponse, description: 'Every webhook of the organization.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('organizationId', 'an organization id') organizationId: string): Promise<WebhooksResponse> {
    return { items: (await this.webhooks.list(await this.managed(customer, organizationId))).map(WebhookResponse.from) };
  }

  @Delete(':webhookId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'deleteOrganizationWebhook', summary: "Delete one of the organization's webhooks; what was queued for it is dropped", description: MANAGERS })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiResponse({ status: 204, description: 'Deleted.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['PERSONAL_ORGANIZATION'] })
  async delete(
    @CurrentCustomer() customer: CustomerPrincipal,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @UuidParam('webhookId', 'a webhook id') webhookId: string,
  ): Promise<void> {
    await this.webhooks.delete(await this.managed(customer, organizationId), webhookId);
  }

  @Post(':webhookId/test')
  @HttpCode(202)
  @CustomerAuth()
  @ApiOperation({ operationId: 'testOrganizationWebhook', summary: "Queue a signed `webhook.test` message to one of the organization's webhooks", description: MANAGERS })
  @ApiParam(ORGANIZATION_ID_PARAM)
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiResponse({ status: 202, type: WebhookTestResponse, description: 'Queued; delivered like any event, with retries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['ORGANIZATION_ROLE'], 404: ['NOT_FOUND'], 409: ['WEBHOOK_DISABLED', 'PERSONAL_ORGANIZATION'] })
  async test(
    @CurrentCustomer() customer: CustomerPrincipal,
    @UuidParam('organizationId', 'an organization id') organizationId: string,
    @UuidParam('webhookId', 'a webhook id') webhookId: string,
  ): Promise<WebhookTestResponse> {
    return { messageId: await this.webhooks.test(await this.managed(customer, organizationId), webhookId) };
  }

  private async managed(customer: CustomerPrincipal, organizationId: string): Promise<IntegrationHolder> {
    await this.organizations.administering(customer.userId, organizationId, 'webhooks');
    return { kind: 'organization', id: organizationId };
  }
}
