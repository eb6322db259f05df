import { ApiProperty } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { PageQuery } from '../../../shared/http/page-query.js';
import type { FailedDelivery } from '../application/deliveries.service.js';

export class DeliveriesQuery extends PageQuery(200) {
  @ApiProperty({ enum: ['failed'], description: 'Which deliveries: `failed`, those that ran out of retries (kept 30 days).' })
  @IsIn(['failed'])
  state!: 'failed';
}

export class DeliveryResponse {
  @ApiProperty({ format: 'uuid', example: '5b1f0a52-7c1e-4d0b-9d51-6a8e2c7f4b13' })
  deliveryId!: string;

  @ApiProperty({ enum: ['email', 'webhook'] })
  channel!: 'email' | 'webhook';

  @ApiProperty({ example: 'mail.verification', description: 'What was being delivered.' })
  kind!: string;

  @ApiProperty({ example: 'ada@example.com', description: 'The recipient address, or the webhook URL without its query string.' })
  target!: string;

  @ApiProperty({ example: 36, description: 'Attempts made, the first included.' })
  attempts!: number;

  @ApiProperty({ example: 'SMTP_CONNREFUSED', description: 'Why the last attempt failed: SMTP_<nodemailer code or reply code>, HTTP_<status>, TIMEOUT, …' })
  lastErrorCode!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-20T09:00:00.000Z', description: 'When the delivery was enqueued.' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:12:00.000Z', description: 'When it was given up.' })
  failedAt!: string;

  static from(delivery: FailedDelivery): DeliveryResponse {
    return {
      deliveryId: delivery.deliveryId,
      channel: delivery.channel,
      kind: delivery.kind,
      target: delivery.target,
      attempts: delivery.attempts,
      lastErrorCode: delivery.lastErrorCode,
      createdAt: delivery.createdAt.toISOString(),
      failedAt: delivery.failedAt.toISOString(),
    };
  }
}

export class DeliveriesResponse {
  @ApiProperty({ type: [DeliveryResponse] })
  items!: DeliveryResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next page; null on the last one.' })
  nextCursor!: string | null;
}
