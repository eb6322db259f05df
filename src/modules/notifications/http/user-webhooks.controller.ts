import { Body, Controller, Delete, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { WebhooksService } from '../application/webhooks.service.js';
import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
import { CreatedWebhookResponse, CreateWebhookRequest, WebhookResponse, WebhooksResponse, WebhookTestResponse } from './webhooks.dto.js';

const accountOf = (customer: CustomerPrincipal): IntegrationHolder => ({ kind: 'user', id: customer.userId });

/** An account's webhooks: the events of its personal organization's devices (an organization's are under /api/v1/organizations). */
@ApiTags('webhooks')
@Controller('user/webhooks')
export class UserWebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @CustomerAuth()
  @NoStore()
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Register a webhook for the events of your devices',
    description:
      'Deliveries follow the Standard Webhooks specification (headers webhook-id, webhook-timestamp, webhook-signature; body {type, timestamp, data}, see the webhooks section), at least once, retried with backoff for more than 24 h. A webhook failing for 24 h is disabled and you get an e-mail. At most 10 per account.',
  })
  @ApiBody({ type: CreateWebhookRequest })
  @ApiResponse({ status: 201, type: CreatedWebhookResponse, description: 'Registered; the secret is shown only here.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['WEBHOOK_URL_NOT_ALLOWED'], 409: ['TOO_MANY_WEBHOOKS'] })
  async create(@CurrentCustomer() customer: CustomerPrincipal, @Body() body: CreateWebhookRequest): Promise<CreatedWebhookResponse> {
    const { webhook, secret } = await this.webhooks.create(accountOf(customer), body.url, body.types ?? null);
    return { ...WebhookResponse.from(webhook), secret };
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({ operationId: 'listWebhooks', summary: 'Your webhooks (without their secrets)' })
  @ApiResponse({ status: 200, type: WebhooksResponse, description: 'Every webhook of the account.' })
  async list(@CurrentCustomer() customer: CustomerPrincipal): Promise<WebhooksResponse> {
    return { items: (await this.webhooks.list(accountOf(customer))).map(WebhookResponse.from) };
  }

  @Delete(':webhookId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'deleteWebhook', summary: 'Delete one of your webhooks; what was queued for it is dropped' })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiResponse({ status: 204, description: 'Deleted.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async delete(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('webhookId', 'a webhook id') webhookId: string): Promise<void> {
    await this.webhooks.delete(accountOf(customer), webhookId);
  }

  @Post(':webhookId/test')
  @HttpCode(202)
  @CustomerAuth()
  @ApiOperation({ operationId: 'testWebhook', summary: 'Queue a signed `webhook.test` message to one of your webhooks' })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiResponse({ status: 202, type: WebhookTestResponse, description: 'Queued; delivered like any event, with retries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'], 409: ['WEBHOOK_DISABLED'] })
  async test(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('webhookId', 'a webhook id') webhookId: string): Promise<WebhookTestResponse> {
    return { messageId: await this.webhooks.test(accountOf(customer), webhookId) };
  }
}
