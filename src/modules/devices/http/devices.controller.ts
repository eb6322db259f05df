import { Body, Controller, Get, HttpCode, Post, Put } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentDevice, DeviceAuth, Public } from '../../../auth/auth.decorators.js';
import { ApiCredentialCheckUnavailable, ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { AuthBodyLimit } from '../../../shared/http/auth-body-limit.decorator.js';
import { ClientAddress } from '../../../shared/http/client-address.decorator.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { DeviceRegistrationService } from '../application/device-registration.service.js';
import { DevicePrincipal } from '../../../auth/principals.js';
import { DeviceLoginRequest, RefreshTokenRequest } from './device-credentials.request.js';
import { DeviceMeResponse, RegisterDeviceResponse, TokenResponse } from './device.response.js';
import { RegisterDeviceRequest } from './register-device.request.js';
import { SetClaimCodeRequest } from './claim-code.request.js';

@ApiTags('devices')
@Controller('device')
export class DevicesController {
  constructor(private readonly registration: DeviceRegistrationService) {}

  @Post('register')
  @NoStore()
  @Public()
  @AuthBodyLimit()
  @ApiOperation({
    operationId: 'registerDevice',
    summary: 'Register a new gateway',
    description:
      'Creates the device and returns its secret, tokens and initial configuration. A retry after a lost response (same deviceId, hardwareId and claim code, within 10 minutes, before the credentials were used) gets fresh credentials and voids the earlier ones. Any other registration of a known deviceId is a 409 and changes nothing.',
  })
  @ApiBody({ type: RegisterDeviceRequest })
  @ApiResponse({ status: 201, type: RegisterDeviceResponse, description: 'Registered.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['CLAIM_CODE_REQUIRED'], 403: ['REGISTRATION_NOT_ALLOWED'], 409: ['DEVICE_ALREADY_REGISTERED', 'DEVICE_DECOMMISSIONED'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async register(@Body() body: RegisterDeviceRequest, @ClientAddress() address: string): Promise<RegisterDeviceResponse> {
    return RegisterDeviceResponse.fromRegistration(await this.registration.register(body, address));
  }

  @Post('login')
  @NoStore()
  @HttpCode(200)
  @Public()
  @AuthBodyLimit()
  @ApiOperation({ operationId: 'loginDevice', summary: 'Obtain a fresh access token with deviceId and deviceSecret' })
  @ApiBody({ type: DeviceLoginRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'Logged in.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 401: ['INVALID_CREDENTIALS'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async login(@Body() body: DeviceLoginRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.registration.login(body.deviceId, body.deviceSecret, address));
  }

  @Post('token/refresh')
  @NoStore()
  @HttpCode(200)
  @Public()
  @AuthBodyLimit()
  @ApiOperation({
    operationId: 'refreshDeviceToken',
    summary: 'Exchange a refresh token for a new token pair',
    description:
      'The presented refresh token stops working. Presenting it again voids every token of the device; the gateway then logs in with its secret. Except a repeat within REFRESH_REUSE_GRACE_SEC (30 s) while the new refresh token is unused (the answer was lost): it gets the same pair again.',
  })
  @ApiBody({ type: RefreshTokenRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'New token pair.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 401: ['INVALID_TOKEN', 'UNAUTHORIZED'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async refresh(@Body() body: RefreshTokenRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.registration.refresh(body.refreshToken, address));
  }

  @Get('me')
  @DeviceAuth()
  @ApiOperation({ operationId: 'getCurrentDevice', summary: 'The calling gateway as the service knows it' })
  @ApiResponse({ status: 200, type: DeviceMeResponse, description: 'The device.' })
  async me(@CurrentDevice() principal: DevicePrincipal): Promise<DeviceMeResponse> {
    return DeviceMeResponse.from(await this.registration.getDevice(principal.deviceId));
  }

  @Put('claim-code')
  @HttpCode(204)
  @DeviceAuth()
  @ApiOperation({
    operationId: 'setDeviceClaimCode',
    summary: 'Set the claim code of a legacy gateway (once)',
    description: 'For gateways registered before claim codes that updated to firmware 0.1.4 or later. Only while the device has no claim code.',
  })
  @ApiBody({ type: SetClaimCodeRequest })
  @ApiResponse({ status: 204, description: 'Stored (as an argon2id hash).' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 409: ['CLAIM_CODE_ALREADY_SET'] })
  async setClaimCode(@CurrentDevice() principal: DevicePrincipal, @Body() body: SetClaimCodeRequest): Promise<void> {
    await this.registration.setClaimCode(principal.deviceId, body.claimCode);
  }
}
