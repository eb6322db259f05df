import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../../../auth/auth.decorators.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../domain/password-policy.js';

/**
 * The page the reset mail's link leads to when PUBLIC_BASE_URL is this service (docs/api.md, Customer
 * accounts and claiming). Fixed text only: the token stays in the address bar, where the script
 * reads it, and never enters the HTML. The script is a file of its own because the CSP allows no
 * inline script (script-src 'self'); it posts JSON to the API's confirm operation, the same call a
 * dashboard's own page makes.
 */
const PAGE = [
  '<!doctype html>',
  '<html lang="en">',
  '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
  '<title>Choose a new password · Device Cloud</title>',
  '<script src="/reset-password/page.js" defer></script></head>',
  '<body><main>',
  '<h1>Choose a new password</h1>',
  '<form id="reset" hidden>',
  `<p><label>New password<br><input id="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" maxlength="${PASSWORD_MAX_LENGTH}"></label></p>`,
  `<p><label>The same again<br><input id="repeat" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" maxlength="${PASSWORD_MAX_LENGTH}"></label></p>`,
  '<p><button type="submit">Set the password</button></p>',
  '</form>',
  '<p id="status" role="status" aria-live="polite"></p>',
  '<noscript><p>This page needs JavaScript to send the new password.</p></noscript>',
  '</main></body>',
  '</html>',
  '',
].join('\n');

/** What the page does: plain browser JavaScript, no build step. */
const SCRIPT = `'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const token = new URLSearchParams(location.search).get('token');
  const form = document.getElementById('reset');
  const status = document.getElementById('status');
  const say = (text) => { status.textContent = text; };
  if (!token) {
    say('This link is incomplete: open the link from the mail again, or ask for a new one.');
    return;
  }
  form.hidden = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const password = document.getElementById('password').value;
    if (password !== document.getElementById('repeat').value) {
      say('The two passwords differ.');
      return;
    }
    const button = form.querySelector('button');
    button.disabled = true;
    say('Setting the password…');
    try {
      const response = await fetch('/api/v1/auth/password-reset/confirm', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token, password }),
      });
      if (response.ok) {
        form.remove();
        // The token is used up: it need not stay in the address bar or the history.
        history.replaceState(null, '', location.pathname);
        say('Your password is changed, and every session of the account has ended. Sign in with the new password.');
        return;
      }
      const problem = await response.json().catch(() => ({}));
      if (problem.code === 'INVALID_TOKEN') {
        form.remove();
        say('This link is unknown, expired or already used, so nothing was changed. Ask for a new link.');
      } else if (problem.code === 'PASSWORD_TOO_COMMON' || problem.code === 'VALIDATION_FAILED') {
        say('This password is not allowed: ' + (problem.detail || 'choose another one.'));
      } else if (response.status === 429) {
        say('Too many attempts from this address: try again later.');
      } else {
        say('The password could not be set just now: try again in a moment.');
      }
    } catch {
      say('The service could not be reached: check the connection and try again.');
    } finally {
      button.disabled = false;
    }
  });
});
`;

@ApiExcludeController()
@Controller('reset-password')
export class ResetPasswordPageController {
  @Get()
  @Public()
  @NoStore()
  @Header('Content-Type', 'text/html; charset=utf-8')
  page(): string {
    return PAGE;
  }

  @Get('page.js')
  @Public()
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=300')
  script(): string {
    return SCRIPT;
  }
}
