import { Controller, Get, Header, Query, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../../../auth/auth.decorators.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { AccountSignupService } from '../application/account-signup.service.js';
import { InvalidVerificationTokenError } from '../domain/accounts.errors.js';

/** A page with fixed text only: nothing from the request is echoed, so nothing needs escaping. */
function page(title: string, message: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title} · Device Cloud</title></head>`,
    `<body><main><h1>${title}</h1><p>${message}</p></main></body>`,
    '</html>',
    '',
  ].join('\n');
}

const CONFIRMED = page('Address confirmed', 'Your e-mail address is confirmed. You can close this page and sign in.');
const NOT_CONFIRMED = page(
  'Link not valid',
  'This link is unknown, expired or already used, so nothing was confirmed. If you opened it before, your address is already confirmed: sign in. Otherwise sign in and ask for a new link.',
);

/**
 * Where the verification mail's link leads (outside /api/v1, not an API operation). Opening the
 * page confirms the address: the token is single-use and proves the mail arrived, which is all a
 * click on the link could prove (docs/api.md, customer accounts and claiming).
 */
@ApiExcludeController()
@Controller('verify-email')
export class VerifyEmailPageController {
  constructor(private readonly signups: AccountSignupService) {}

  @Get()
  @Public()
  @NoStore()
  @Header('Content-Type', 'text/html; charset=utf-8')
  async confirm(@Query('token') token: unknown, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 256) return this.notConfirmed(reply);
    try {
      await this.signups.verifyEmail(token);
    } catch (error) {
      if (error instanceof InvalidVerificationTokenError) return this.notConfirmed(reply);
      // The database unreachable and the like: a problem document, like every other answer.
      throw error;
    }
    return CONFIRMED;
  }

  private notConfirmed(reply: FastifyReply): string {
    void reply.status(400);
    return NOT_CONFIRMED;
  }
}
