import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
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

/** Chromium resolves this name to 127.0.0.1 (--host-resolver-rules): a host name that is not localhost, as on a LAN or a VM. */
const HOST_NAME = 'api.test';

async function authorize(page: Page, token: string): Promise<void> {
  await page.locator('button.authorize').first().click();
  const customerScheme = page.locator('.auth-container').filter({ hasText: 'customer' });
  await customerScheme.locator('input[type=text], input[type=password]').first().fill(token);
  await customerScheme.locator('button.authorize').click();
  await page.locator('.auth-btn-wrapper button.btn-done, button.btn-done').first().click();
}

/** Every request the page could not make, as "url error", from now on. */
function failedRequests(page: Page): string[] {
  const failed: string[] = [];
  page.on('requestfailed', (request) => failed.push(`${request.url()} ${request.failure()?.errorText ?? ''}`));
  return failed;
}

/**
 * Waits until Swagger UI has drawn its operations, or fails as soon as a request of the page has
 * failed (a page upgraded to https loses its scripts and styles and never draws). Drawing the whole
 * document takes a few seconds of the browser's CPU on a quiet machine and several times that on a
 * busy 2-core one, so the wait is on the condition, not on a figure.
 */
async function operationsDrawn(page: Page, failed: string[]): Promise<void> {
  const drawn = page.locator('.opblock').first();
  while (!(await drawn.isVisible())) {
    if (failed.length > 0) throw new Error(`Swagger UI cannot draw: ${failed.join('; ')}`);
    await drawn.waitFor({ timeout: 250 }).catch(() => undefined);
  }
}

/** Executes GET /api/v1/users/me from the page; its status and body as the page shows them. */
async function executeUsersMe(page: Page): Promise<{ status: string; body: string }> {
  const operation = page.locator('.opblock').filter({ has: page.locator('.opblock-summary-path[data-path="/api/v1/users/me"]') }).filter({ has: page.locator('.opblock-summary-method', { hasText: 'GET' }) });
  await operation.locator('.opblock-summary').first().click();
  await operation.locator('button.try-out__btn').click();
  await operation.locator('button.execute').click();
  const status = operation.locator('.live-responses-table .response .response-col_status').first();
  await status.waitFor();
  const body = await operation.locator('.live-responses-table .response-col_description pre').first().innerText();
  return { status: (await status.innerText()).trim(), body };
}

describeWithBrowser('Swagger UI at /docs in headless Chromium', () => {
  // Page loads of the whole document in a browser that shares 2 cores with the rest of the suite.
  const BROWSER_TEST_MS = 180_000;
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', `--host-resolver-rules=MAP ${HOST_NAME} 127.0.0.1`] });
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
    const failed = failedRequests(page);

    await page.goto(`${t.baseUrl}/docs`, { waitUntil: 'networkidle' });
    await operationsDrawn(page, failed);
    await page.locator('.swagger-ui .info .title').filter({ hasText: 'Device Cloud Service' }).waitFor();

    await authorize(page, customer.accessToken);
    const answer = await executeUsersMe(page);
    expect(answer.status).toBe('200');
    expect(JSON.parse(answer.body)).toMatchObject({ email: customer.email });

    mkdirSync(join('test-output'), { recursive: true });
    await page.screenshot({ path: join('test-output', 'swagger-ui-users-me.png'), fullPage: false });
    expect(pageErrors).toEqual([]);
  }, BROWSER_TEST_MS);

  it(`renders its operations at http://${HOST_NAME}:<port>/docs (plain HTTP, a host name), and keeps the Authorize token across a reload`, async () => {
    const customer = await aVerifiedCustomer(t);
    const page = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
    const failed = failedRequests(page);
    const docs = `http://${HOST_NAME}:${new URL(t.baseUrl).port}/docs`;

    await page.goto(docs, { waitUntil: 'networkidle' });
    // Upgraded to https, the page's scripts and styles fail and it stays blank.
    await operationsDrawn(page, failed);
    expect(await page.locator('.opblock').count()).toBeGreaterThan(10);
    expect(failed).toEqual([]);

    await authorize(page, customer.accessToken);
    await page.reload({ waitUntil: 'networkidle' });
    await operationsDrawn(page, failed);

    const answer = await executeUsersMe(page);
    expect(answer.status).toBe('200');
    expect(JSON.parse(answer.body)).toMatchObject({ email: customer.email });
    expect(failed).toEqual([]);
  }, BROWSER_TEST_MS);
});
