import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { loginCustomer, signUp, type Customer } from '../support/customers.js';
import { expectProblem } from '../support/problems.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

/**
 * The page the reset mail's link leads to when PUBLIC_BASE_URL is unset (this service): fetched
 * plainly, and followed in Debian's chromium driven by playwright-core the way a user follows it.
 * Like the other browser tests, `.ci/run` sets REQUIRE_BROWSER=1, so there the browser part runs or
 * fails; without chromium it skips, and says so.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but there is no chromium at ${CHROMIUM}`);
if (!available) process.stderr.write(`\nSKIPPING the reset page's browser tests: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH).\n`);
const describeWithBrowser = available ? describe : describe.skip;

describe('the password reset page (/reset-password)', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ SMTP_URL: sink.url, JOB_POLL_INTERVAL_MS: '500' });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  /** Asks for a reset of the customer's address and returns the link exactly as the mail prints it. */
  async function resetLinkFor(customer: Customer): Promise<string> {
    expect((await t.api.POST('/api/v1/auth/password-reset', { body: { email: customer.email } })).response.status).toBe(202);
    let mail = await sink.waitForMessage(customer.email, 10_000);
    // Sign-up mailed a verification link first.
    while (!mail.text.includes('/reset-password?token=')) mail = await sink.waitForMessage(customer.email, 10_000);
    const link = /^https?:\/\/\S+\/reset-password\?token=\S+$/m.exec(mail.text)?.[0];
    if (!link) throw new Error(`no reset link in the mail:\n${mail.text}`);
    return link;
  }

  const passwordHash = async (customer: Customer) =>
    (await t.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [customer.userId])).rows[0].password_hash;

  it('is served by this service at the address the link names, as fixed HTML with its script from the same origin (no inline script, no token in the page)', async () => {
    const customer = await signUp(t);
    const link = await resetLinkFor(customer);
    expect(link.startsWith(`${t.baseUrl}/reset-password?token=`)).toBe(true);
    const token = new URL(link).searchParams.get('token')!;
    const before = await passwordHash(customer);

    const page = await fetch(link);

    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain('<h1>Choose a new password</h1>');
    expect(html).not.toContain(token);
    expect([...html.matchAll(/<script[^>]*>/g)].map(([tag]) => tag)).toEqual(['<script src="/reset-password/page.js" defer>']);
    expect(html).not.toMatch(/\son\w+=/i);
    const script = await fetch(`${t.baseUrl}/reset-password/page.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain("fetch('/api/v1/auth/password-reset/confirm'");
    // Fetching the page uses nothing up: the password is what it was.
    expect(await passwordHash(customer)).toBe(before);
    expect((await loginCustomer(t.api, customer.email, customer.password)).accessToken).toEqual(expect.any(String));
  });

  it('is no API operation: absent from the OpenAPI document, and not under /api/v1', async () => {
    const document = (await (await fetch(`${t.baseUrl}/docs/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((path) => path.includes('reset-password'))).toEqual([]);
    expect((await fetch(`${t.baseUrl}/api/v1/reset-password`)).status).toBe(404);
  });

  describeWithBrowser('in a browser', () => {
    let browser: Browser;

    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    });
    afterAll(async () => {
      await browser?.close();
    });

    async function open(link: string): Promise<{ page: Page; failedRequests: string[] }> {
      const page = await browser.newPage();
      const failedRequests: string[] = [];
      // Chromium asks for /favicon.ico on its own; every other answer must be a success.
      page.on('response', (response) => {
        if (response.status() >= 400 && new URL(response.url()).pathname !== '/favicon.ico') failedRequests.push(`${response.status()} ${response.url()}`);
      });
      page.on('pageerror', (error) => failedRequests.push(error.message));
      await page.goto(link);
      return { page, failedRequests };
    }

    /**
     * The status line once it says something other than the "in progress" note. Polled from here:
     * the page's CSP rightly refuses playwright's evaluated wait functions.
     */
    async function settledStatus(page: Page): Promise<string> {
      for (const started = Date.now(); Date.now() - started < 10_000; await new Promise((resume) => setTimeout(resume, 50))) {
        const text = (await page.textContent('#status')) ?? '';
        if (text !== '' && !text.startsWith('Setting')) return text;
      }
      throw new Error(`the status line did not settle: ${await page.textContent('#status')}`);
    }

    async function submit(page: Page, password: string, repeat = password): Promise<string> {
      await page.fill('#password', password);
      await page.fill('#repeat', repeat);
      await page.click('button[type=submit]');
      return settledStatus(page);
    }

    it('sets the new password from the mailed link: old password and sessions dead, the new one signs in, the token leaves the address bar', async () => {
      const customer = await signUp(t);
      const session = await loginCustomer(t.api, customer.email, customer.password);
      const link = await resetLinkFor(customer);
      const newPassword = `page-${Math.random().toString(36).slice(2, 12)}-pw`;
      const { page, failedRequests } = await open(link);

      const status = await submit(page, newPassword);

      expect(status).toMatch(/^Your password is changed/);
      expect(page.url()).toBe(`${t.baseUrl}/reset-password`);
      expect(await page.$('#reset')).toBeNull();
      expect(failedRequests).toEqual([]);
      expectProblem(await t.api.POST('/api/v1/auth/login', { body: { email: customer.email, password: customer.password } }), 401, 'INVALID_CREDENTIALS');
      expectProblem(await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: session.refreshToken } }), 401, 'INVALID_TOKEN');
      expect((await loginCustomer(t.api, customer.email, newPassword)).accessToken).toEqual(expect.any(String));
      await page.close();

      // The same link again: the page says so, and the password stays the new one.
      const again = await open(link);
      expect(await submit(again.page, 'another-password-1')).toMatch(/unknown, expired or already used/);
      expect((await loginCustomer(t.api, customer.email, newPassword)).accessToken).toEqual(expect.any(String));
      await again.page.close();
    });

    it('refuses two different passwords and a too common one in the page, and the link stays usable', async () => {
      const customer = await signUp(t);
      const link = await resetLinkFor(customer);
      const before = await passwordHash(customer);
      const { page } = await open(link);

      expect(await submit(page, 'first-password-1', 'other-password-2')).toBe('The two passwords differ.');
      expect(await submit(page, 'aaaaaaaaaaaa')).toMatch(/^This password is not allowed/);
      expect(await passwordHash(customer)).toBe(before);

      expect(await submit(page, 'finally-a-good-one-7')).toMatch(/^Your password is changed/);
      expect(await passwordHash(customer)).not.toBe(before);
      await page.close();
    });

    it('without a token the page says the link is incomplete and shows no form', async () => {
      const { page } = await open(`${t.baseUrl}/reset-password`);
      expect(await settledStatus(page)).toMatch(/^This link is incomplete/);
      expect(await page.isVisible('#reset')).toBe(false);
      await page.close();
    });
  });
});
