import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { DeviceAccess } from '../../sharing/index.js';
import { BATTERY_ID_PATTERN } from '../../telemetry/index.js';
import { BatteriesService } from '../application/batteries.service.js';
import { BatteryIdPipe } from './battery-id.pipe.js';
import { BatteryListResponse, BatteryProfileRequest, BatteryProfileResponse, BatteryResponse, BatteryEnergyPointResponse, BatteryEnergyQuery, BatteryEnergyResponse, BatteryHealthQuery, BatteryHealthResponse } from './batteries.dto.js';

const viewerOf = (customer: CustomerPrincipal) => ({ userId: customer.userId, isAdmin: customer.isAdmin });

/**
 * A device's batteries: profiles (owner and installers), and what their records tell (everyone
 * who sees the device). Who may do what is the sharing module's one rule (DeviceAccess).
 */
@ApiTags('dashboard')
@Controller('dashboard/devices/:deviceId/batteries')
export class DashboardBatteriesController {
  constructor(
    private readonly batteries: BatteriesService,
    private readonly access: DeviceAccess,
  ) {}

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'listBatteries',
    summary: 'The batteries of a visible device: profile, newest values, time to empty or full',
    description: 'Every battery that has a profile or has sent a record, by batteryId: one page always holds them (a gateway reports a handful).',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: BatteryListResponse, description: 'The batteries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string): Promise<BatteryListResponse> {
    await this.access.toSee(viewerOf(customer), deviceId);
    return { items: (await this.batteries.list(deviceId)).map(BatteryResponse.from) };
  }

  @Put(':batteryId')
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'putBatteryProfile',
    summary: 'Set what a battery is: name, chemistry, nominal voltage, capacity',
    description: 'The owner, an installer or an administrator; a viewer gets 403 SHARE_ROLE. A battery that has sent nothing yet may be profiled ahead of its first record. Replaces the whole profile.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'batteryId', example: 'main', schema: { type: 'string', pattern: BATTERY_ID_PATTERN.source } })
  @ApiBody({ type: BatteryProfileRequest })
  @ApiResponse({ status: 200, type: BatteryProfileResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['SHARE_ROLE', 'API_KEY_SCOPE'], 404: ['NOT_FOUND'] })
  async put(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @Param('batteryId', BatteryIdPipe) batteryId: string,
    @Body() body: BatteryProfileRequest,
  ): Promise<BatteryProfileResponse> {
    await this.access.toManage(viewerOf(customer), deviceId);
    return BatteryProfileResponse.from(await this.batteries.putProfile({ deviceId, batteryId }, body));
  }

  @Get(':batteryId/energy')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'getBatteryEnergy',
    summary: 'Charge and energy in and out per bucket, with equivalent full cycles',
    description: [
      'From `current` (A, positive = charging) and `voltage`, integrated by the trapezoidal rule between consecutive records of the battery at most 15 minutes apart, split at bucket edges and where the current or the power changes sign; larger gaps contribute nothing (coverage below 1).',
      'Where both records hold the gateway’s own counters `chargedAhTotal` and `dischargedAhTotal`, those give the Ah (a decrease is a counter reset: the new count), and Wh is that at the mean voltage.',
      'Exact under late and out-of-order uploads: a record landing between two stored ones replaces their segment by two, and every answer first recomputes the hours records have landed in since.',
    ].join(' '),
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'batteryId', example: 'main', schema: { type: 'string', pattern: BATTERY_ID_PATTERN.source } })
  @ApiResponse({ status: 200, type: BatteryEnergyResponse, description: 'Every bucket of the range.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async energy(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @Param('batteryId', BatteryIdPipe) batteryId: string,
    @Query() query: BatteryEnergyQuery,
  ): Promise<BatteryEnergyResponse> {
    const grant = await this.access.toSee(viewerOf(customer), deviceId);
    const energy = await this.batteries.energyOf({ deviceId, batteryId }, query, grant.role === 'admin' ? null : grant.visibleSince);
    return { batteryId, bucketSeconds: energy.bucketSeconds, points: energy.points.map(BatteryEnergyPointResponse.from) };
  }

  @Get(':batteryId/health')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'getBatteryHealth',
    summary: 'Ageing stress over a range: cycles, depth of discharge, time at extremes, state of health',
    description:
      'From the battery’s records of the range, each metric a straight line between records at most 15 minutes apart: a discharge’s depth runs from a local SoC maximum to the next minimum (a turn counts once the SoC moved 1 point back).',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'batteryId', example: 'main', schema: { type: 'string', pattern: BATTERY_ID_PATTERN.source } })
  @ApiResponse({ status: 200, type: BatteryHealthResponse, description: 'The figures.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async health(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @Param('batteryId', BatteryIdPipe) batteryId: string,
    @Query() query: BatteryHealthQuery,
  ): Promise<BatteryHealthResponse> {
    const grant = await this.access.toSee(viewerOf(customer), deviceId);
    return BatteryHealthResponse.from(await this.batteries.healthOf({ deviceId, batteryId }, query, grant.role === 'admin' ? null : grant.visibleSince));
  }
}
