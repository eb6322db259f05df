import { DEVICE_EVENT_TYPES } from '../../events/index.js';

const headers = {
  'webhook-id': { required: true, schema: { type: 'string' }, description: 'The event id (evt_…), the same on every retry: drop duplicates by it.' },
  'webhook-timestamp': { required: true, schema: { type: 'string' }, description: 'Unix seconds when this attempt was signed.' },
  'webhook-signature': { required: true, schema: { type: 'string' }, description: '`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under your webhook secret (Standard Webhooks).' },
};

function webhook(type: string, summary: string, data: object) {
  return {
    post: {
      operationId: `webhook_${type.replace(/\./g, '_')}`,
      summary,
      description: 'Sent to your webhooks, signed per the Standard Webhooks specification; answer 2xx within 5 s. Other answers and timeouts are retried with backoff for more than 24 h.',
      security: [],
      parameters: Object.entries(headers).map(([name, header]) => ({ name, in: 'header', ...header })),
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', required: ['type', 'timestamp', 'data'], properties: { type: { type: 'string', const: type }, timestamp: { type: 'string', format: 'date-time' }, data } } } },
      },
      responses: { '200': { description: 'Any 2xx answer acknowledges the message.' } },
    },
  };
}

const eventData = { $ref: '#/components/schemas/DeviceEventResponse' };

/** The OpenAPI 3.1 `webhooks` section: every message the service may send to a customer's webhook. */
export function webhookDocumentation(): Record<string, unknown> {
  const entries: Array<[string, unknown]> = DEVICE_EVENT_TYPES.map((type) => [type, webhook(type, `Event ${type} of one of your devices (data: the event, as GET /api/v1/dashboard/events shows it)`, eventData)]);
  entries.push([
    'webhook.test',
    webhook('webhook.test', 'Test message sent by POST /api/v1/user/webhooks/{webhookId}/test', { type: 'object', required: ['webhookId'], properties: { webhookId: { type: 'string', format: 'uuid' } } }),
  ]);
  return Object.fromEntries(entries);
}
