import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth, Public } from '../../../auth/auth.decorators.js';
import { ApiCredentialCheckUnavailable, ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { ClientAddress } from '../../../shared/http/client-address.decorator.js';
import { TokenResponse } from '../../devices/http/device.response.js';
import { AccountsService, CustomerPrincipal } from '../application/accounts.service.js';
import { LoginRequest, SignupRequest, UserRefreshRequest, VerifyEmailRequest } from './accounts.requests.js';
import { EmailVerifiedResponse, SignupResponse, UserMeResponse } from './accounts.responses.js';

@ApiTags('accounts')
@Controller()
export class AuthController {
  constructor(private readonly accounts: AccountsService) {}

  @Post('auth/signup')
  @Public()
  @ApiOperation({ operationId: 'signup', summary: 'Create a customer account', description: 'Sends a verification link to the address.' })
  @ApiBody({ type: SignupRequest })
  @ApiResponse({ status: 201, type: SignupResponse, description: 'Account created.' })
  @ApiProblems(400, 409, 413, 415)
  async signup(@Body() body: SignupRequest): Promise<SignupResponse> {
    return SignupResponse.from(await this.accounts.signup(body.email, body.password));
  }

  @Post('auth/verify-email')
  @HttpCode(200)
  @Public()
  @ApiOperation({ operationId: 'verifyEmail', summary: 'Confirm an e-mail address with the token from the link' })
  @ApiBody({ type: VerifyEmailRequest })
  @ApiResponse({ status: 200, type: EmailVerifiedResponse, description: 'Verified.' })
  @ApiProblems(400, 413, 415)
  async verifyEmail(@Body() body: VerifyEmailRequest): Promise<EmailVerifiedResponse> {
    await this.accounts.verifyEmail(body.token);
    return { emailVerified: true };
  }

  @Post('auth/resend-verification')
  @HttpCode(202)
  @CustomerAuth()
  @ApiOperation({ operationId: 'resendVerification', summary: 'Send the verification link again' })
  @ApiResponse({ status: 202, description: 'A new link is on its way (none when already verified).' })
  @ApiProblems(429, 503)
  async resendVerification(@CurrentCustomer() customer: CustomerPrincipal): Promise<void> {
    await this.accounts.resendVerification(customer.userId);
  }

  @Post('auth/login')
  @HttpCode(200)
  @Public()
  @ApiOperation({ operationId: 'login', summary: 'Sign in with e-mail and password' })
  @ApiBody({ type: LoginRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'Signed in.' })
  @ApiProblems(400, 401, 413, 415, 429)
  @ApiCredentialCheckUnavailable()
  async login(@Body() body: LoginRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.accounts.login(body.email, body.password, address));
  }

  @Post('auth/refresh')
  @HttpCode(200)
  @Public()
  @ApiOperation({ operationId: 'refreshCustomerToken', summary: 'Exchange a refresh token for a new token pair (single use)' })
  @ApiBody({ type: UserRefreshRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'New token pair.' })
  @ApiProblems(400, 401, 413, 415, 429)
  @ApiCredentialCheckUnavailable()
  async refresh(@Body() body: UserRefreshRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.accounts.refresh(body.refreshToken, address));
  }

  @Post('auth/logout')
  @HttpCode(204)
  @Public()
  @ApiOperation({ operationId: 'logout', summary: 'Revoke a refresh token' })
  @ApiBody({ type: UserRefreshRequest })
  @ApiResponse({ status: 204, description: 'Revoked (also when it was unknown or already revoked).' })
  @ApiProblems(400, 413, 415)
  async logout(@Body() body: UserRefreshRequest): Promise<void> {
    await this.accounts.logout(body.refreshToken);
  }

  @Get('users/me')
  @CustomerAuth()
  @ApiOperation({ operationId: 'getCurrentUser', summary: 'The signed-in account' })
  @ApiResponse({ status: 200, type: UserMeResponse, description: 'The account.' })
  async me(@CurrentCustomer() customer: CustomerPrincipal): Promise<UserMeResponse> {
    return UserMeResponse.from(await this.accounts.getUser(customer.userId));
  }
}
