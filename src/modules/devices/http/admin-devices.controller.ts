import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth, CurrentCustomer } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { DeviceRegistrationService } from '../application/device-registration.service.js';
import { combineImport } from '../domain/registration-allowlist.js';
import { ImportAllowlistRequest, ImportAllowlistResponse } from './allowlist.request.js';

@ApiTags('admin')
@Controller('admin/devices')
export class AdminDevicesController {
  constructor(private readonly registration: DeviceRegistrationService) {}

  @Post('allowlist')
  @HttpCode(200)
  @AdminAuth()
  @ApiOperation({
    operationId: 'importRegistrationAllowlist',
    summary: 'Allow deviceId/hardwareId pairs to register (REGISTRATION_MODE=allowlist)',
    description: 'Send `entries` as JSON, or `csv` with the header `deviceId,hardwareId`. A deviceId already listed takes the new hardwareId.',
  })
  @ApiBody({ type: ImportAllowlistRequest })
  @ApiResponse({ status: 200, type: ImportAllowlistResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async importAllowlist(@CurrentCustomer() admin: CustomerPrincipal, @Body() body: ImportAllowlistRequest): Promise<ImportAllowlistResponse> {
    return { imported: await this.registration.importAllowlist(combineImport(body.entries ?? [], body.csv), admin.userId) };
  }
}
