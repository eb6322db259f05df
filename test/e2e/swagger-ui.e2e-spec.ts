import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { aVerifiedCustomer } from '../support/customers.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

/**
 * Swagger UI in a real browser: Debian's chromium, driven by playwright-core. `.ci/run` installs
 * chromium and sets REQUIRE_BROWSER=1, so there the test runs or fails; a laptop without
 * chromium skips it, and says so.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but there is no chromium at ${CHROMIUM}`);
if (!available) {
  process.stderr.write(`\nSKIPPING the Swagger UI browser test: no chromium at ${CHROMIUM} (apt-get install chromium chromium-driver, or set CHROMIUM_PATH).\n`);
}
const describeWithBrowser = available ? describe : describe.skip;

describeWithBrowser('Swagger UI at /docs in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('authorizes with a customer token and executes GET /api/v1/users/me from the page: 200 with the account', async () => {
    const customer = await aVerifiedCustomer(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${t.baseUrl}/docs`, { waitUntil: 'networkidle' });
    await page.locator('.swagger-ui .info .title').filter({ hasText: 'Device Cloud Service' }).waitFor();

    await page.locator('button.authorize').first().click();
    const customerScheme = page.locator('.auth-container').filter({ hasText: 'customer' });
    await customerScheme.locator('input[type=text], input[type=password]').first().fill(customer.accessToken);
    await customerScheme.locator('button.authorize').click();
    await page.locator('.auth-btn-wrapper button.btn-done, button.btn-done').first().click();

    const operation = page.locator('.opblock').filter({ has: page.locator('.opblock-summary-path[data-path="/api/v1/users/me"]') }).filter({ has: page.locator('.opblock-summary-method', { hasText: 'GET' }) });
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();

    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    expect((await status.innerText()).trim()).toBe('200');
    const body = await operation.locator('.live-responses-table .response-col_description pre').first().innerText();
    expect(JSON.parse(body)).toMatchObject({ email: customer.email });

    mkdirSync(join('test-output'), { recursive: true });
    await page.screenshot({ path: join('test-output', 'swagger-ui-users-me.png'), fullPage: false });
    expect(pageErrors).toEqual([]);
  });
});
