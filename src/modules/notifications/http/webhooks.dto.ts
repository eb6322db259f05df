import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsString, MaxLength } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_EVENT_TYPES } from '../../events/index.js';
import type { Webhook } from '../domain/webhook.js';

export class CreateWebhookRequest {
  @ApiProperty({ example: 'https://hooks.example.com/device-cloud', maxLength: 2048, description: 'An https URL whose every address is public. No redirects are followed.' })
  @IsString()
  @MaxLength(2048)
  url!: string;

  @ApiPropertyOptional({ type: [String], enum: DEVICE_EVENT_TYPES, example: ['alert.opened', 'device.offline'], description: 'The event types it receives; all of them when absent.' })
  @Optional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(DEVICE_EVENT_TYPES.length)
  @IsIn(DEVICE_EVENT_TYPES, { each: true })
  types?: string[];
}

export class WebhookResponse {
  @ApiProperty({ format: 'uuid', example: '9e2d4b1a-6f3c-4a8e-b5d7-1c0f2e3a4b5c' })
  webhookId!: string;

  @ApiProperty({ example: 'https://hooks.example.com/device-cloud' })
  url!: string;

  @ApiProperty({ type: [String], enum: DEVICE_EVENT_TYPES, nullable: true, example: ['alert.opened', 'device.offline'], description: 'null: every type.' })
  types!: string[] | null;

  @ApiProperty({ example: true, description: 'False once it was disabled for failing (WEBHOOK_DISABLE_AFTER_SEC).' })
  enabled!: boolean;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  createdAt!: string;

  static from(webhook: Webhook): WebhookResponse {
    return { webhookId: webhook.webhookId, url: webhook.url, types: webhook.types, enabled: webhook.enabled, createdAt: webhook.createdAt.toISOString() };
  }
}

export class CreatedWebhookResponse extends WebhookResponse {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'The signing secret (Standard Webhooks). Shown only in this answer: keep it.' })
  secret!: string;
}

export class WebhooksResponse {
  @ApiProperty({ type: [WebhookResponse] })
  items!: WebhookResponse[];
}

export class WebhookTestResponse {
  @ApiProperty({ example: 'msg_2b0c4c0b1c7e4f7e9b7a0d3f2e1c5a6b', description: 'The webhook-id the test message carries.' })
  messageId!: string;
}
