import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { components } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, aRegisteredDevice, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { buildDashboard, CHROMIUM, describeWithBrowser, serveFiles } from '../support/dashboard-browser.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { DAY, HOUR, MINUTE, ingest, ingestAll, iso, type TelemetryRecordBody } from '../support/telemetry.js';

type OtaEventBody = components['schemas']['OtaEventRequest'];
type LogLineBody = components['schemas']['LogLineRequest'];
type CrashReportBody = components['schemas']['CrashReportRequest'];

/**
 * The reference dashboard (examples/dashboard) built by Vite and served from an origin of its own,
 * in Debian's chromium driven by playwright-core, against the real service. Like the Swagger UI
 * test: `.ci/run` sets REQUIRE_BROWSER=1, so there it runs or fails; without chromium it skips, and
 * says so.
 */

/** The metrics the device page charts and shows the latest value of (in data-value). */
const METRICS = ['soc', 'voltage', 'temperature'] as const;
const FIVE_MINUTES = 5 * MINUTE;

/**
 * Days of a gateway on a solar-charged 12 V LiFePO4 battery, every 5 minutes: charged by day (more
 * on some days than on others), drained by a steady load at night. The same for the same `now`.
 * The records sit half-way between 5-minute marks, so none is near the edge of a range the page
 * asks for a few seconds after `now`.
 */
function solarDays(now: number, days: number): TelemetryRecordBody[] {
  const count = (days * DAY) / FIVE_MINUTES;
  const records: TelemetryRecordBody[] = [];
  let soc = 80;
  for (let k = count - 1; k >= 0; k -= 1) {
    const at = now - FIVE_MINUTES / 2 - k * FIVE_MINUTES;
    const hour = new Date(at).getUTCHours() + new Date(at).getUTCMinutes() / 60;
    const clouds = 1 + 0.12 * Math.sin(Math.floor(at / DAY) * 2.3);
    const sun = clouds * Math.max(0, Math.sin((Math.PI * (hour - 6)) / 12));
    const noise = Math.sin(k * 1.7) * 0.15 + Math.sin(k * 0.31) * 0.1;
    soc = Math.min(100, Math.max(5, soc + (sun * 10.2 - 3.2) / 12 + noise * 0.1));
    const charging = soc < 99.5 ? sun : 0;
    records.push({
      ts: iso(at),
      metrics: {
        soc: round(soc, 1),
        voltage: round(12.9 + (0.5 * soc) / 100 + 0.9 * charging + noise * 0.12, 2),
        temperature: round(17 + 6 * Math.sin((2 * Math.PI * (hour - 9)) / 24) + 4 * charging + noise * 2, 1),
      },
    });
  }
  return records;
}

function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

/** How many buckets of `widthMs` (aligned to the epoch, as the service aligns them) hold records. */
function bucketsOf(records: TelemetryRecordBody[], widthMs: number): number {
  return new Set(records.map((record) => Math.floor(Date.parse(record.ts) / widthMs))).size;
}

describeWithBrowser('the dashboard browser test')('the reference dashboard (examples/dashboard) in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let site: { origin: string; close: () => Promise<void> };
  let outDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'dcs-dashboard-'));
    site = await serveFiles(outDir);
    t = await createTestApp({ CORS_ORIGINS: site.origin });
    await buildDashboard(outDir, t.baseUrl);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await t?.close();
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });

  /** A verified customer, as the claim fixtures want one. */
  async function aSignedInCustomer(): Promise<SignedInCustomer & SignedIn> {
    const customer = await aVerifiedCustomer(t);
    return { ...customer, headers: customerAuth(customer.accessToken) };
  }

  /** The dashboard in a fresh browser context, signed in through its form, on the device list. */
  async function signedInPage(customer: SignedInCustomer): Promise<{ page: Page; pageErrors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(site.origin);
    await page.locator('form.sign-in input[name=email]').fill(customer.email);
    await page.locator('form.sign-in input[name=password]').fill(customer.password);
    await page.locator('form.sign-in button[type=submit]').click();
    await page.locator('table.devices').waitFor();
    return { page, pageErrors };
  }

  /** Marks the document: the mark is gone if the page reloads. */
  async function markDocument(page: Page): Promise<() => Promise<boolean>> {
    await page.locator('html').evaluate((root) => root.setAttribute('data-unreloaded', 'yes'));
    return async () => (await page.locator('html').getAttribute('data-unreloaded')) === 'yes';
  }

  /** The computed `property` of each element `selector` finds (this project's types have no DOM, hence the string). */
  async function computed(page: Page, selector: string, property: 'color' | 'backgroundColor'): Promise<string[]> {
    return (await page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((element) => getComputedStyle(element).${property})`)) as string[];
  }

  function screenshot(page: Page, name: string): Promise<Buffer> {
    mkdirSync('test-output', { recursive: true });
    return page.screenshot({ path: join('test-output', `dashboard-${name}.png`), fullPage: true });
  }

  it('signs in, lists the device with its state of charge, claims another by its code, and draws the stored history and OTA events of a device', async () => {
    const owner = await aSignedInCustomer();
    const { body: device, registered } = await aClaimedDevice(t, owner);
    const now = Date.now();
    const records = solarDays(now, 6);
    await ingestAll(t.api, registered.accessToken, records);
    const last = records.at(-1)!.metrics;
    const ota: OtaEventBody[] = (['download_started', 'download_completed', 'install_started', 'install_succeeded', 'boot_confirmed'] as const).map((type, i) => ({
      ts: iso(now - DAY + i * MINUTE),
      type,
      fromVersion: '0.1.4',
      toVersion: '0.1.5',
    }));
    const reported = await t.api.POST('/api/v1/ota/events', { body: { events: ota }, headers: bearer(registered.accessToken) });
    expect(reported.response.status).toBe(200);
    const unclaimed = await aRegisteredDevice(t);

    const { page, pageErrors } = await signedInPage(owner);

    const row = page.locator(`table.devices tr[data-device-id="${device.deviceId}"]`);
    await row.waitFor();
    expect(await row.locator('.online .badge').getAttribute('data-online')).toBe('true');
    expect(await row.locator('.soc [data-battery="main"]').getAttribute('data-value')).toBe(String(last.soc));
    expect(await row.locator('.soc').innerText()).toBe(`${last.soc.toFixed(1)} %`);
    await screenshot(page, 'list');

    // A wrong code: the problem's detail on the form, nothing claimed.
    const claimForm = page.locator('form.claim');
    await claimForm.locator('input[name=deviceId]').fill(unclaimed.body.deviceId);
    await claimForm.locator('input[name=claimCode]').fill('AAAA-BBBB-CCCC');
    await claimForm.locator('button[type=submit]').click();
    await eventually(async () => expect(await claimForm.locator('.form-error').innerText()).not.toBe(''));
    expect((await ownedDeviceRow(t.db, unclaimed.body.deviceId))?.owner_id).toBeNull();

    await claimForm.locator('input[name=claimCode]').fill(unclaimed.body.claimCode!.toLowerCase());
    await claimForm.locator('button[type=submit]').click();
    await page.locator(`table.devices tr[data-device-id="${unclaimed.body.deviceId}"]`).waitFor();
    expect(await claimForm.locator('.form-error').innerText()).toBe('');
    expect((await ownedDeviceRow(t.db, unclaimed.body.deviceId))?.owner_id).toBe(owner.userId);

    await row.locator('a').click();
    const soc = page.locator('figure.chart[data-metric="soc"]');
    const lastDay = records.filter((record) => Date.parse(record.ts) >= now - DAY);
    // 24 h in 5-minute buckets (bucket=auto): every stored record of the last day, drawn.
    await eventually(async () => expect(await soc.getAttribute('data-records')).toBe(String(lastDay.length)));
    expect(await soc.getAttribute('data-points')).toBe(String(bucketsOf(lastDay, FIVE_MINUTES)));
    for (const metric of METRICS) {
      expect(await page.locator(`figure.chart[data-metric="${metric}"] canvas`).count()).toBeGreaterThan(0);
      expect(await page.locator(`dd[data-latest="${metric}"]`).getAttribute('data-value')).toBe(String(last[metric]));
    }

    // 7 d in 1-hour buckets: all six days.
    await page.locator('button[data-range="7 d"]').click();
    await eventually(async () => expect(await soc.getAttribute('data-records')).toBe(String(records.length)));
    expect(await soc.getAttribute('data-points')).toBe(String(bucketsOf(records, HOUR)));
    expect(await page.locator('figure.chart[data-metric="temperature"]').getAttribute('data-records')).toBe(String(records.length));

    const otaRows = page.locator('section.ota tbody tr');
    await eventually(async () => expect(await otaRows.count()).toBe(ota.length));
    expect(await otaRows.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-type')))).toEqual(ota.map((event) => event.type).reverse());

    expect(await page.locator('#notice').isHidden()).toBe(true);
    await screenshot(page, 'device');
    const docsShot = process.env.DASHBOARD_SCREENSHOT;
    if (docsShot) {
      mkdirSync(dirname(docsShot), { recursive: true });
      await page.screenshot({ path: docsShot, fullPage: true });
    }
    expect(pageErrors).toEqual([]);
  });

  it('draws the window chosen, ending now, for a gateway claimed minutes ago with a single record (not uPlot\'s own range around one point)', async () => {
    const owner = await aSignedInCustomer();
    const { body: device, registered } = await aClaimedDevice(t, owner);
    await ingest(t.api, registered.accessToken, [{ ts: iso(Date.now() - 3 * MINUTE), metrics: { soc: 64.2, voltage: 13.1, temperature: 20.5 } }]);
    const { page, pageErrors } = await signedInPage(owner);

    await page.locator(`table.devices tr[data-device-id="${device.deviceId}"] a`).click();
    for (const [range, span] of [['24 h', DAY], ['7 d', 7 * DAY], ['30 d', 30 * DAY]] as const) {
      const picked = Date.now();
      if (range !== '24 h') await page.locator(`button[data-range="${range}"]`).click();
      for (const metric of METRICS) {
        const chart = page.locator(`figure.chart[data-metric="${metric}"]`);
        // The span of the axis uPlot drew (data-axis-from, data-axis-to): the window, from when the page asked for it.
        const axis = async () => ({
          records: await chart.getAttribute('data-records'),
          from: Date.parse((await chart.getAttribute('data-axis-from')) ?? ''),
          to: Date.parse((await chart.getAttribute('data-axis-to')) ?? ''),
        });
        const { to } = await eventually(async () => {
          const drawn = await axis();
          expect({ range, metric, records: drawn.records, spanHours: (drawn.to - drawn.from) / HOUR }).toEqual({ range, metric, records: '1', spanHours: span / HOUR });
          return drawn;
        });
        expect(to).toBeGreaterThanOrEqual(picked - 1000);
        expect(to).toBeLessThanOrEqual(Date.now());
      }
    }
    await screenshot(page, 'single-record');
    expect(pageErrors).toEqual([]);
  });

  it('shows an open alert and acknowledges it with its button', async () => {
    const owner = await aSignedInCustomer();
    const { body: device, registered } = await aClaimedDevice(t, owner);
    await aRuleOpeningBelow(owner, device.deviceId, 20);
    await ingest(t.api, registered.accessToken, [{ ts: iso(Date.now() - MINUTE), metrics: { soc: 15 } }]);
    const [alert] = await eventually(async () => {
      const { data } = await t.api.GET('/api/v1/dashboard/alerts', { params: { query: { deviceId: device.deviceId } }, headers: owner.headers });
      expect(data?.items).toHaveLength(1);
      return data!.items;
    });

    const { page, pageErrors } = await signedInPage(owner);

    const row = page.locator(`section.alerts tr[data-alert-id="${alert.alertId}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-state')).toBe('open');
    expect(await row.innerText()).toContain(device.deviceId);
    await row.locator('button', { hasText: 'Acknowledge' }).click();
    await page.locator(`section.alerts tr[data-alert-id="${alert.alertId}"][data-state="acknowledged"]`).waitFor();

    const { data } = await t.api.GET('/api/v1/dashboard/alerts', { params: { query: { deviceId: device.deviceId } }, headers: owner.headers });
    expect(data!.items).toEqual([{ ...alert, state: 'acknowledged', acknowledgedAt: expect.any(String) }]);
    await screenshot(page, 'alert-acknowledged');
    expect(pageErrors).toEqual([]);
  });

  it('a refused access token is refreshed once, however many calls it failed, and the calls are repeated with the new one', async () => {
    const owner = await aSignedInCustomer();
    const { body: device } = await aClaimedDevice(t, owner);
    const { page, pageErrors } = await signedInPage(owner);
    await page.locator(`table.devices tr[data-device-id="${device.deviceId}"]`).waitFor();
    let refreshes = 0;
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/auth/refresh')) refreshes += 1;
    });

    // The page keeps its tokens in sessionStorage; a reload with a token the service refuses.
    await page.evaluate(`(() => {
      const session = JSON.parse(sessionStorage.getItem('device-cloud.session'));
      sessionStorage.setItem('device-cloud.session', JSON.stringify({ ...session, accessToken: 'not-a-token' }));
    })()`);
    await page.reload();

    await page.locator(`table.devices tr[data-device-id="${device.deviceId}"]`).waitFor();
    await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });
    expect(refreshes).toBe(1);
    expect(await page.locator('#notice').isHidden()).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  describe('the Commands panel', () => {
    it('sends a ping; the gateway fetches it and answers, and the row says so as it happens, without a reload', async () => {
      const owner = await aSignedInCustomer();
      const { body: device, registered } = await aClaimedDevice(t, owner);
      const gateway = bearer(registered.accessToken);
      const { page, pageErrors } = await signedInPage(owner);
      const unreloaded = await markDocument(page);
      await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });
      await page.locator(`table.devices tr[data-device-id="${device.deviceId}"] a`).click();
      await page.locator('section.commands p.empty', { hasText: 'No commands sent.' }).waitFor();

      await page.locator('section.commands button[data-command="ping"]').click();
      const queued = page.locator('section.commands tr[data-type="ping"][data-state="queued"]');
      await queued.waitFor();
      const commandId = (await queued.getAttribute('data-command-id'))!;
      expect(await queued.locator('button', { hasText: 'Cancel' }).count()).toBe(1);
      const row = page.locator(`section.commands tr[data-command-id="${commandId}"]`);

      // The gateway's poll hands it over (command.delivered), then the gateway answers (command.succeeded).
      const polled = await t.api.GET('/api/v1/device/commands', { headers: gateway });
      expect(polled.data?.commands.map((command) => [command.commandId, command.type])).toEqual([[commandId, 'ping']]);
      await page.locator(`section.commands tr[data-command-id="${commandId}"][data-state="delivered"]`).waitFor({ timeout: 5000 });
      expect(await row.locator('button', { hasText: 'Cancel' }).count()).toBe(0);
      const answered = await t.api.POST('/api/v1/device/commands/{commandId}/result', { params: { path: { commandId } }, body: { status: 'succeeded', output: 'pong 12 ms' }, headers: gateway });
      expect(answered.data).toEqual({ commandId, state: 'succeeded' });

      await page.locator(`section.commands tr[data-command-id="${commandId}"][data-state="succeeded"]`).waitFor({ timeout: 5000 });
      const cells = await row.locator('td').allInnerTexts();
      expect(cells.map((cell) => cell.trim())).toEqual(['ping', 'succeeded', expect.any(String), expect.any(String), 'pong 12 ms', '']);
      expect(cells[3]).not.toBe('');
      expect(await page.locator('section.commands tbody tr').count()).toBe(1);

      expect(await unreloaded()).toBe(true);
      expect(await page.locator('#notice').isHidden()).toBe(true);
      await screenshot(page, 'commands');
      expect(pageErrors).toEqual([]);
    });

    it('cancels a queued reboot once confirmed; a viewer sees the commands but neither the buttons nor Cancel', async () => {
      const owner = await aSignedInCustomer();
      const viewer = await aSignedInCustomer();
      const { body: device } = await aClaimedDevice(t, owner);
      const deviceId = device.deviceId;
      const shared = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body: { email: viewer.email, role: 'viewer' }, headers: owner.headers });
      expect(shared.response.status).toBe(201);
      const { page, pageErrors } = await signedInPage(owner);
      await page.locator(`table.devices tr[data-device-id="${deviceId}"] a`).click();
      const reboot = page.locator('section.commands button[data-command="reboot"]');

      // Dismissed, the confirmation sends nothing; accepted, a reboot is queued.
      page.once('dialog', (dialog) => void dialog.dismiss());
      await reboot.click();
      page.once('dialog', (dialog) => void dialog.accept());
      await reboot.click();
      const queued = page.locator('section.commands tr[data-type="reboot"][data-state="queued"]');
      await queued.waitFor();
      const commandId = (await queued.getAttribute('data-command-id'))!;
      await queued.locator('button', { hasText: 'Cancel' }).click();
      await page.locator(`section.commands tr[data-command-id="${commandId}"][data-state="cancelled"]`).waitFor();
      expect(await page.locator('section.commands tbody tr').count()).toBe(1);
      const { data } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, headers: owner.headers });
      expect(data!.items.map((command) => [command.commandId, command.type, command.state])).toEqual([[commandId, 'reboot', 'cancelled']]);

      const ping = await t.api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, body: { type: 'ping' }, headers: owner.headers });
      expect(ping.response.status).toBe(201);
      const seen = await signedInPage(viewer);
      await seen.page.locator(`table.devices tr[data-device-id="${deviceId}"] a`).click();
      await seen.page.locator(`section.commands tr[data-command-id="${ping.data!.commandId}"][data-state="queued"]`).waitFor();
      // The device's detail (which says the viewer's access) has arrived too.
      await seen.page.locator('.facts .badge').waitFor();
      expect(await seen.page.locator('section.commands tbody tr').count()).toBe(2);
      expect(await seen.page.locator('section.commands .command-actions').isHidden()).toBe(true);
      expect(await seen.page.locator('section.commands tbody button').count()).toBe(0);

      expect(await page.locator('#notice').isHidden()).toBe(true);
      expect(pageErrors).toEqual([]);
      expect(seen.pageErrors).toEqual([]);
    });
  });

  describe('the Logs and Crashes panels', () => {
    /** Newest first, as the Logs panel shows them: one of each level, then 100 heartbeats older than all of them. */
    function gatewayLines(now: number): LogLineBody[] {
      const recent: LogLineBody[] = [
        { ts: iso(now - 1 * MINUTE), level: 'verbose', tag: 'ota', message: 'checking for updates' },
        { ts: iso(now - 2 * MINUTE), level: 'debug', tag: 'bms', message: 'poll took 41 ms' },
        { ts: iso(now - 3 * MINUTE), level: 'info', tag: 'wifi', message: 'reconnected after 3 attempts' },
        { ts: iso(now - 4 * MINUTE), level: 'warn', tag: 'wifi', message: 'RSSI low: -82 dBm' },
        { ts: iso(now - 5 * MINUTE), level: 'error', tag: 'bms', message: 'CAN timeout reading pack 2' },
      ];
      const heartbeats = Array.from({ length: 100 }, (_, k): LogLineBody => ({ ts: iso(now - 10 * MINUTE - k * 1000), level: 'info', tag: 'main', message: `heartbeat ${100 - k}` }));
      return [...recent, ...heartbeats];
    }

    const BACKTRACE = ['0x400d2f1c', '0x400d3a08', '0x4008b2d1', '0x400d1000', '0x400d1100', '0x400d9999', '0x40081234'];

    it('show what the gateway uploaded: log lines newest first, filtered by level and text, with older pages; crashes marked apart from reboots; for a viewer too', async () => {
      const owner = await aSignedInCustomer();
      const viewer = await aSignedInCustomer();
      const { body: device, registered } = await aClaimedDevice(t, owner);
      const deviceId = device.deviceId;
      const gateway = bearer(registered.accessToken);
      const now = Date.now();
      const lines = gatewayLines(now);
      // Sent oldest first, as a gateway empties its buffer.
      const uploaded = await t.api.POST('/api/v1/device/logs', { body: { lines: [...lines].reverse() }, headers: gateway });
      expect(uploaded.data).toEqual({ accepted: lines.length, duplicates: 0, rejected: [] });
      const crashes: CrashReportBody[] = [
        { crashId: 'boot-7', ts: iso(now - 30 * MINUTE), firmwareVersion: '1.4.2', resetReason: 'panic', uptimeSec: 86_400, panic: { task: 'bms_poll', excCause: 'LoadProhibited', pc: '0x400d2f1c', backtrace: BACKTRACE } },
        { crashId: 'boot-8', ts: iso(now - 20 * MINUTE), firmwareVersion: '1.4.2', resetReason: 'brownout', uptimeSec: 42 },
        { crashId: 'boot-9', ts: iso(now - 15 * MINUTE), firmwareVersion: '1.4.3', resetReason: 'task_wdt', uptimeSec: 5400, panic: { task: 'IDLE0', backtrace: BACKTRACE.slice(0, 3) } },
      ];
      for (const body of crashes) expect((await t.api.POST('/api/v1/device/crashes', { body, headers: gateway })).response.status).toBe(201);
      const shared = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body: { email: viewer.email, role: 'viewer' }, headers: owner.headers });
      expect(shared.response.status).toBe(201);

      const { page, pageErrors } = await signedInPage(owner);
      await page.locator(`table.devices tr[data-device-id="${deviceId}"] a`).click();
      const logs = page.locator('section.logs');
      const older = logs.locator('button[data-action="older"]');
      const shown = () =>
        logs.locator('ol.log-lines li').evaluateAll((items) =>
          items.map((item) => ({
            ts: item.querySelector('time')?.getAttribute('datetime'),
            level: item.getAttribute('data-level'),
            tag: item.querySelector('.tag')?.textContent,
            message: item.querySelector('.message')?.textContent,
          })),
        );
      const messages = async () => (await shown()).map((line) => line.message);
      const expected = (picked: LogLineBody[]) => picked.map(({ ts, level, tag, message }) => ({ ts, level, tag, message }));

      // The latest 100, newest first, each with its time, level, tag and message; the rest behind "Older".
      await eventually(async () => expect(await shown()).toEqual(expected(lines.slice(0, 100))));
      expect(await older.isVisible()).toBe(true);
      const first = logs.locator('ol.log-lines li').first();
      expect(await first.locator('time').innerText()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);
      expect(await first.locator('.level').innerText()).toContain('VERBOSE');
      // Each level in a colour of its own.
      const levels = await logs.locator('ol.log-lines li').evaluateAll((items) => items.map((item) => item.getAttribute('data-level')));
      const colours = new Map((await computed(page, 'section.logs ol.log-lines li .level', 'color')).map((colour, i) => [levels[i], colour]));
      expect(colours.size).toBe(5);
      expect(new Set(colours.values()).size).toBe(5);

      await older.click();
      await eventually(async () => expect(await shown()).toEqual(expected(lines)));
      await older.waitFor({ state: 'hidden' });

      // Warnings and more severe: the warning and the error.
      await logs.locator('select[name=level]').selectOption('warn');
      await eventually(async () => expect(await messages()).toEqual(['RSSI low: -82 dBm', 'CAN timeout reading pack 2']));
      expect(await older.isHidden()).toBe(true);
      // And a text, which the tag matches too.
      await logs.locator('input[name=q]').fill('wifi');
      await eventually(async () => expect(await messages()).toEqual(['RSSI low: -82 dBm']));
      await logs.locator('select[name=level]').selectOption('');
      await eventually(async () => expect(await messages()).toEqual(['reconnected after 3 attempts', 'RSSI low: -82 dBm']));
      // Case-insensitive, in the message.
      await logs.locator('input[name=q]').fill('POLL TOOK');
      await eventually(async () => expect(await shown()).toEqual(expected([lines[1]])));
      await logs.locator('input[name=q]').fill('no such line');
      await logs.locator('p.empty', { hasText: 'No lines match.' }).waitFor();
      expect(await logs.locator('ol.log-lines').isHidden()).toBe(true);
      await logs.locator('input[name=q]').fill('');
      await eventually(async () => expect(await shown()).toEqual(expected(lines.slice(0, 100))));

      // Crashes, newest first: the watchdog and the panic marked as crashes, the brown-out as a reboot.
      const crashRows = page.locator('section.crashes tbody tr');
      await eventually(async () => expect(await crashRows.evaluateAll((rows) => rows.map((row) => [row.getAttribute('data-crash-id'), row.getAttribute('data-kind')]))).toEqual([
        ['boot-9', 'crash'],
        ['boot-8', 'reboot'],
        ['boot-7', 'crash'],
      ]));
      const cells = async (crashId: string) => (await page.locator(`section.crashes tr[data-crash-id="${crashId}"] td`).allInnerTexts()).map((cell) => cell.trim());
      expect((await cells('boot-7')).slice(1)).toEqual(['1.4.2', 'panic', '1 d 0 h', 'bms_poll · LoadProhibited', `${BACKTRACE.slice(0, 5).join(' ')} … +2`]);
      expect((await cells('boot-8')).slice(1)).toEqual(['1.4.2', 'brownout', '42 s', '', '']);
      expect((await cells('boot-9')).slice(1)).toEqual(['1.4.3', 'task_wdt', '1 h 30 min', 'IDLE0', BACKTRACE.slice(0, 3).join(' ')]);
      const reasonColour = async (crashId: string) => (await computed(page, `section.crashes tr[data-crash-id="${crashId}"] .reason`, 'backgroundColor'))[0];
      expect(await reasonColour('boot-7')).toBe(await reasonColour('boot-9'));
      expect(await reasonColour('boot-7')).not.toBe(await reasonColour('boot-8'));

      // Refresh shows a report sent since.
      const rebooted: CrashReportBody = { crashId: 'boot-10', ts: iso(Date.now() - MINUTE), firmwareVersion: '1.4.3', resetReason: 'sw', uptimeSec: 120 };
      expect((await t.api.POST('/api/v1/device/crashes', { body: rebooted, headers: gateway })).response.status).toBe(201);
      await page.locator('section.crashes button[data-action="refresh"]').click();
      await page.locator('section.crashes tbody tr:first-child[data-crash-id="boot-10"][data-kind="reboot"]').waitFor();
      expect(await page.locator('#notice').isHidden()).toBe(true);
      await screenshot(page, 'logs-crashes');

      // A viewer sees both.
      const seen = await signedInPage(viewer);
      await seen.page.locator(`table.devices tr[data-device-id="${deviceId}"] a`).click();
      await seen.page.locator('section.crashes tr[data-crash-id="boot-7"][data-kind="crash"]').waitFor();
      await seen.page.locator('section.logs[data-lines="100"]').waitFor();
      await seen.page.locator('section.logs select[name=level]').selectOption('error');
      await eventually(async () => expect(await seen.page.locator('section.logs ol.log-lines li .message').allInnerTexts()).toEqual(['CAN timeout reading pack 2']));
      expect(await seen.page.locator('#notice').isHidden()).toBe(true);

      expect(pageErrors).toEqual([]);
      expect(seen.pageErrors).toEqual([]);
    });
  });

  describe('live, from the event stream (GET /api/v1/dashboard/stream)', () => {
    it('a record the gateway sends shows within 2 s on the device list, then on the device page, without a reload', async () => {
      const owner = await aSignedInCustomer();
      const { body: device, registered } = await aClaimedDevice(t, owner);
      const now = Date.now();
      await ingestAll(t.api, registered.accessToken, [
        { ts: iso(now - 20 * MINUTE), metrics: { soc: 70, voltage: 13.2, temperature: 21 } },
        { ts: iso(now - 10 * MINUTE), metrics: { soc: 69.5, voltage: 13.19, temperature: 21.5 } },
      ]);
      const { page, pageErrors } = await signedInPage(owner);
      const unreloaded = await markDocument(page);
      await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });

      await sent(registered.accessToken, { soc: 68.4, voltage: 13.17, temperature: 22 });
      await page.locator(`table.devices tr[data-device-id="${device.deviceId}"] .soc [data-value="68.4"]`).waitFor({ timeout: 2000 });

      await page.locator(`table.devices tr[data-device-id="${device.deviceId}"] a`).click();
      const soc = page.locator('figure.chart[data-metric="soc"]');
      await eventually(async () => expect(await soc.getAttribute('data-records')).toBe('3'));
      await sent(registered.accessToken, { soc: 67.9, voltage: 13.16, temperature: 22.5 });
      await page.locator('dd[data-latest="soc"][data-value="67.9"]').waitFor({ timeout: 2000 });
      expect(await soc.getAttribute('data-records')).toBe('4');
      expect(await page.locator('dd[data-latest="voltage"]').getAttribute('data-value')).toBe('13.16');

      expect(await unreloaded()).toBe(true);
      await screenshot(page, 'live');
      expect(pageErrors).toEqual([]);
    });

    it('after the connection drops, reconnects with a fresh ticket (a ticket opens one stream) from the last event seen, and is live again', async () => {
      const owner = await aSignedInCustomer();
      const { body: device, registered } = await aClaimedDevice(t, owner);
      await aRuleOpeningBelow(owner, device.deviceId, 20);
      await ingest(t.api, registered.accessToken, [{ ts: iso(Date.now() - MINUTE), metrics: { soc: 55 } }]);
      const { page, pageErrors } = await signedInPage(owner);
      const unreloaded = await markDocument(page);
      await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });
      await sent(registered.accessToken, { soc: 12 });
      await page.locator('section.alerts tr[data-state="open"]').waitFor({ timeout: 5000 });
      const { data: events } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId: device.deviceId, type: 'alert.opened' } }, headers: owner.headers });
      const opened = events!.items[0].id;
      // The row may have come from the page's first load: drop the connection only once the stream has delivered the event.
      await page.locator(`#stream-state[data-last-event-id="${opened}"]`).waitFor({ state: 'attached', timeout: 5000 });
      let tickets = 0;
      const streams: URL[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname === '/api/v1/dashboard/stream/tickets') tickets += 1;
        if (url.pathname === '/api/v1/dashboard/stream') streams.push(url);
      });

      // Every connection to the service drops, the stream's among them.
      t.app.getHttpServer().closeAllConnections();
      await page.locator('#stream-state[data-stream="closed"]').waitFor({ timeout: 5000 });
      await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });
      expect(tickets).toBe(1);
      expect(streams).toHaveLength(1);
      expect(streams[0].searchParams.get('lastEventId')).toBe(opened);

      // Back above clearAt: the record shows, and the alert it resolves leaves the list.
      await sent(registered.accessToken, { soc: 54.5 });
      await page.locator(`table.devices tr[data-device-id="${device.deviceId}"] .soc [data-value="54.5"]`).waitFor({ timeout: 2000 });
      await page.locator('section.alerts tr[data-state="open"]').waitFor({ state: 'detached', timeout: 5000 });
      expect(await unreloaded()).toBe(true);
      expect(pageErrors).toEqual([]);
    });

    it('an alert that opens while the page is open shows without a reload', async () => {
      const owner = await aSignedInCustomer();
      const { body: device, registered } = await aClaimedDevice(t, owner);
      await aRuleOpeningBelow(owner, device.deviceId, 20);
      const { page, pageErrors } = await signedInPage(owner);
      const unreloaded = await markDocument(page);
      await page.locator('#stream-state[data-stream="open"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('section.alerts tbody tr').count()).toBe(0);

      await sent(registered.accessToken, { soc: 12 });
      await page.locator('section.alerts tr[data-state="open"]').waitFor({ timeout: 5000 });
      expect(await page.locator('section.alerts tr[data-state="open"]').innerText()).toContain(device.deviceId);

      expect(await unreloaded()).toBe(true);
      expect(pageErrors).toEqual([]);
    });
  });

  /** The gateway sends one record stamped now; the service must take it. */
  async function sent(deviceAccessToken: string, metrics: Record<string, number>): Promise<void> {
    const { data, response } = await ingest(t.api, deviceAccessToken, [{ ts: iso(Date.now()), metrics }]);
    expect({ status: response.status, accepted: data?.accepted }).toEqual({ status: 200, accepted: 1 });
  }

  /** The device's own rules: one that opens an alert on the first record with soc below `threshold`. */
  async function aRuleOpeningBelow(owner: SignedIn, deviceId: string, threshold: number): Promise<void> {
    const rules = [{ ruleId: 'soc-now', metric: 'soc', op: 'below' as const, threshold, clearAt: threshold + 5, forSec: 0, enabled: true }];
    const { response } = await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, body: { rules }, headers: owner.headers });
    expect(response.status).toBe(200);
  }
});
