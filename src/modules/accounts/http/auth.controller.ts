import { Body, Controller, Delete, Get, HttpCode, Patch, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth, Public } from '../../../auth/auth.decorators.js';
import { ApiCredentialCheckUnavailable, ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { AuthBodyLimit } from '../../../shared/http/auth-body-limit.decorator.js';
import { ClientAddress } from '../../../shared/http/client-address.decorator.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { TokenResponse } from '../../../shared/http/token.response.js';
import { AccountsService } from '../application/accounts.service.js';
import { AccountPasswordService } from '../application/account-password.service.js';
import { AccountSessionsService } from '../application/account-sessions.service.js';
import { AccountSignupService } from '../application/account-signup.service.js';
import { CustomerPrincipal } from '../../../auth/principals.js';
import {
  ChangePasswordRequest,
  DeleteAccountRequest,
  LoginRequest,
  PasswordResetConfirmRequest,
  PasswordResetRequest,
  SignupRequest,
  UpdateMeRequest,
  UserRefreshRequest,
  VerifyEmailRequest,
} from './accounts.requests.js';
import { EmailVerifiedResponse, PasswordResetResponse, SignupResponse, UserMeResponse } from './accounts.responses.js';

@ApiTags('accounts')
@Controller()
export class AuthController {
  constructor(
    private readonly signups: AccountSignupService,
    private readonly sessions: AccountSessionsService,
    private readonly passwords: AccountPasswordService,
    private readonly accounts: AccountsService,
  ) {}

  @Post('auth/signup')
  @AuthBodyLimit()
  @Public()
  @ApiOperation({
    operationId: 'signup',
    summary: 'Create a customer account',
    description:
      'Sends a verification link to the address. An address that already has an account gets the same answer, and its owner a notice by mail instead: signup does not tell who has an account. A password on the list of the most used passwords, made of one repeated or counted character, or containing the address is refused with PASSWORD_TOO_COMMON. Sign-ups are limited per client address (SIGNUP_MAX_PER_ADDRESS_PER_HOUR).',
  })
  @ApiBody({ type: SignupRequest })
  @ApiResponse({ status: 201, type: SignupResponse, description: 'Account created, or the address already had one (its owner is told by mail).' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['PASSWORD_TOO_COMMON'], 429: ['RATE_LIMITED'] })
  async signup(@Body() body: SignupRequest, @ClientAddress() address: string): Promise<SignupResponse> {
    return SignupResponse.of((await this.signups.signup(body.email, body.password, address)).email);
  }

  @Post('auth/verify-email')
  @NoStore()
  @AuthBodyLimit()
  @HttpCode(200)
  @Public()
  @ApiOperation({ operationId: 'verifyEmail', summary: 'Confirm an e-mail address with the token from the link' })
  @ApiBody({ type: VerifyEmailRequest })
  @ApiResponse({ status: 200, type: EmailVerifiedResponse, description: 'Verified.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['INVALID_TOKEN'] })
  async verifyEmail(@Body() body: VerifyEmailRequest): Promise<EmailVerifiedResponse> {
    await this.signups.verifyEmail(body.token);
    return { emailVerified: true };
  }

  @Post('auth/resend-verification')
  @AuthBodyLimit()
  @HttpCode(202)
  @CustomerAuth()
  @ApiOperation({ operationId: 'resendVerification', summary: 'Send the verification link again' })
  @ApiResponse({ status: 202, description: 'A new link is on its way (none when already verified).' })
  @ApiProblems({ 413: ['PAYLOAD_TOO_LARGE'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async resendVerification(@CurrentCustomer() customer: CustomerPrincipal): Promise<void> {
    await this.signups.resendVerification(customer.userId);
  }

  @Post('auth/login')
  @NoStore()
  @AuthBodyLimit()
  @HttpCode(200)
  @Public()
  @ApiOperation({ operationId: 'login', summary: 'Sign in with e-mail and password' })
  @ApiBody({ type: LoginRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'Signed in.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 401: ['INVALID_CREDENTIALS'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async login(@Body() body: LoginRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.sessions.login(body.email, body.password, address));
  }

  @Post('auth/refresh')
  @NoStore()
  @AuthBodyLimit()
  @HttpCode(200)
  @Public()
  @ApiOperation({
    operationId: 'refreshCustomerToken',
    summary: 'Exchange a refresh token for a new token pair (single use)',
    description:
      'Presenting a used refresh token again voids every token of the account, except a repeat within REFRESH_REUSE_GRACE_SEC (30 s) while the new refresh token is unused: it gets the same pair again.',
  })
  @ApiBody({ type: UserRefreshRequest })
  @ApiResponse({ status: 200, type: TokenResponse, description: 'New token pair.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 401: ['INVALID_TOKEN', 'UNAUTHORIZED'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async refresh(@Body() body: UserRefreshRequest, @ClientAddress() address: string): Promise<TokenResponse> {
    return TokenResponse.from(await this.sessions.refresh(body.refreshToken, address));
  }

  @Post('auth/logout')
  @AuthBodyLimit()
  @HttpCode(204)
  @Public()
  @ApiOperation({
    operationId: 'logout',
    summary: 'End the session of a refresh token',
    description: "Every refresh token of the session stops working, and so do its access tokens, at once. The account's other sessions are untouched.",
  })
  @ApiBody({ type: UserRefreshRequest })
  @ApiResponse({ status: 204, description: 'Ended (also when the token was unknown or already revoked).' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async logout(@Body() body: UserRefreshRequest): Promise<void> {
    await this.sessions.logout(body.refreshToken);
  }

  @Post('auth/password-reset')
  @AuthBodyLimit()
  @HttpCode(202)
  @Public()
  @ApiOperation({
    operationId: 'requestPasswordReset',
    summary: 'Mail a password reset link',
    description:
      'When the address has an account, a link to `<PUBLIC_BASE_URL>/reset-password?token=…` is mailed to it, valid for an hour and once; it replaces every earlier link. The answer, and the time it takes, are the same whether or not the address has an account. Limited per address asked for (PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR) and per client address (PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR).',
  })
  @ApiBody({ type: PasswordResetRequest })
  @ApiResponse({ status: 202, description: 'Taken: a link is on its way if the address has an account.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async requestPasswordReset(@Body() body: PasswordResetRequest, @ClientAddress() address: string): Promise<void> {
    await this.passwords.requestPasswordReset(body.email, address);
  }

  @Post('auth/password-reset/confirm')
  @NoStore()
  @AuthBodyLimit()
  @HttpCode(200)
  @Public()
  @ApiOperation({
    operationId: 'confirmPasswordReset',
    summary: 'Set a new password with the token of a reset link',
    description:
      'Every session of the account ends (its refresh and access tokens stop working at once) and the address counts as verified. The link is used up; a password the policy refuses (PASSWORD_TOO_COMMON) leaves it usable. An unknown, used, replaced or expired token counts against the client address’s failure limit.',
  })
  @ApiBody({ type: PasswordResetConfirmRequest })
  @ApiResponse({ status: 200, type: PasswordResetResponse, description: 'The password is changed; sign in with it.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['INVALID_TOKEN', 'PASSWORD_TOO_COMMON'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async confirmPasswordReset(@Body() body: PasswordResetConfirmRequest, @ClientAddress() address: string): Promise<PasswordResetResponse> {
    await this.passwords.resetPassword(body.token, body.password, address);
    return { passwordChanged: true };
  }

  @Post('users/me/password')
  @AuthBodyLimit()
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({
    operationId: 'changePassword',
    summary: 'Change the signed-in account’s password',
    description: 'Every other session of the account ends; the one making this call stays signed in. A wrong current password answers 403 INVALID_CREDENTIALS and counts as a failed login.',
  })
  @ApiBody({ type: ChangePasswordRequest })
  @ApiResponse({ status: 204, description: 'Changed.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['PASSWORD_TOO_COMMON'], 403: ['INVALID_CREDENTIALS'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async changePassword(@CurrentCustomer() customer: CustomerPrincipal, @Body() body: ChangePasswordRequest, @ClientAddress() address: string): Promise<void> {
    await this.passwords.changePassword(customer, body.currentPassword, body.newPassword, address);
  }

  @Delete('users/me')
  @AuthBodyLimit()
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({
    operationId: 'deleteCurrentUser',
    summary: 'Delete the signed-in account',
    description:
      'Confirmed with the password. The account’s devices are released (claimable again, their telemetry kept with them), its sessions, webhooks and pending notifications end, and the account with its e-mail address is deleted. A wrong password answers 403 INVALID_CREDENTIALS and counts as a failed login; an administrator account cannot delete itself (403 FORBIDDEN). Its personal organization, its memberships and the organizations it alone owns go with it; while it alone owns an organization that owns devices, the deletion is refused with 409 LAST_OWNER naming them, and nothing is deleted.',
  })
  @ApiBody({ type: DeleteAccountRequest })
  @ApiResponse({ status: 204, description: 'Deleted.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['INVALID_CREDENTIALS', 'FORBIDDEN'], 409: ['LAST_OWNER'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async deleteMe(@CurrentCustomer() customer: CustomerPrincipal, @Body() body: DeleteAccountRequest, @ClientAddress() address: string): Promise<void> {
    await this.accounts.deleteAccount(customer, body.password, address);
  }

  @Get('users/me')
  @CustomerAuth()
  @ApiOperation({ operationId: 'getCurrentUser', summary: 'The signed-in account' })
  @ApiResponse({ status: 200, type: UserMeResponse, description: 'The account.' })
  async me(@CurrentCustomer() customer: CustomerPrincipal): Promise<UserMeResponse> {
    return UserMeResponse.from(await this.accounts.getUser(customer.userId));
  }

  @Patch('users/me')
  @CustomerAuth()
  @ApiOperation({ operationId: 'updateCurrentUser', summary: 'Change the signed-in account’s preferences' })
  @ApiBody({ type: UpdateMeRequest })
  @ApiResponse({ status: 200, type: UserMeResponse, description: 'The account as it is now.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async updateMe(@CurrentCustomer() customer: CustomerPrincipal, @Body() body: UpdateMeRequest): Promise<UserMeResponse> {
    return UserMeResponse.from(await this.accounts.setAlertEmails(customer.userId, body.alertEmails));
  }
}
