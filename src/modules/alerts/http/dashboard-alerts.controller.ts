import { Body, Controller, Delete, Get, HttpCode, Post, Put, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { AlertsService } from '../application/alerts.service.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { AlertResponse, AlertRulesRequest, AlertRulesResponse, AlertsQuery, AlertsResponse } from './alerts.dto.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const viewerOf = (customer: CustomerPrincipal) => ({ userId: customer.userId, isAdmin: customer.isAdmin });

@ApiTags('dashboard')
@Controller('dashboard')
export class DashboardAlertsController {
  constructor(private readonly alerts: AlertsService) {}

  @Get('devices/:deviceId/alert-rules')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'getDeviceAlertRules', summary: 'The alert rules of a visible device (shared ones too): its own, or the fleet defaults it follows' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: AlertRulesResponse, description: 'The rules that apply.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async rules(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string): Promise<AlertRulesResponse> {
    return AlertRulesResponse.from(await this.alerts.rulesOf(viewerOf(customer), deviceId));
  }

  @Put('devices/:deviceId/alert-rules')
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'putDeviceAlertRules',
    summary: 'Give a device rules of its own (owner, installer or admin), replacing the fleet defaults for it',
    description: 'Replaces every rule. Alerts open under a rule that is removed or disabled resolve (reason rule_removed); series of rules that stay keep their state.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiBody({ type: AlertRulesRequest })
  @ApiResponse({ status: 200, type: AlertRulesResponse, description: 'Stored; they apply from the next telemetry.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['INVALID_ALERT_RULE'], 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'] })
  async putRules(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @DeviceIdParam() deviceId: string,
    @Body() body: AlertRulesRequest,
  ): Promise<AlertRulesResponse> {
    return AlertRulesResponse.from(await this.alerts.setRules(viewerOf(customer), deviceId, body.rules, by));
  }

  @Delete('devices/:deviceId/alert-rules')
  @HttpCode(200)
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({ operationId: 'deleteDeviceAlertRules', summary: 'Drop a device’s own rules (owner, installer or admin): it follows the fleet defaults again' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: AlertRulesResponse, description: 'The fleet defaults, which now apply.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'] })
  async deleteRules(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @DeviceIdParam() deviceId: string): Promise<AlertRulesResponse> {
    return AlertRulesResponse.from(await this.alerts.setRules(viewerOf(customer), deviceId, null, by));
  }

  @Get('alerts')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'listAlerts',
    summary: 'Alerts of the devices you can see, newest first',
    description: 'Keyset-paginated on (openedAt, alertId). A later owner sees a device’s alerts opened from the release before their claim on; an administrator sees all.',
  })
  @ApiResponse({ status: 200, type: AlertsResponse, description: 'A page of alerts.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: AlertsQuery): Promise<AlertsResponse> {
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? null : decodeTimeCursor(query.cursor, (key) => UUID.test(key));
    const rows = await this.alerts.list(viewerOf(customer), { deviceId: query.deviceId ?? null, state: query.state ?? null, before: before && { openedAt: before.ts, alertId: before.key }, limit: limit + 1 });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(AlertResponse.from), nextCursor: rows.length > limit ? encodeTimeCursor(last.openedAt, last.alertId) : null };
  }

  @Post('alerts/:alertId/acknowledge')
  @HttpCode(200)
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'acknowledgeAlert',
    summary: 'Say you have seen an alert',
    description: 'An open alert becomes acknowledged; it still resolves by itself when the value recovers. Repeating it, or acknowledging a resolved alert, changes nothing but the first acknowledgement time.',
  })
  @ApiParam({ name: 'alertId', format: 'uuid' })
  @ApiResponse({ status: 200, type: AlertResponse, description: 'The alert.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'] })
  async acknowledge(@CurrentCustomer() customer: CustomerPrincipal, @UuidParam('alertId', 'an alert id') alertId: string): Promise<AlertResponse> {
    return AlertResponse.from(await this.alerts.acknowledge(viewerOf(customer), alertId));
  }
}
