import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import type { components } from '@device-cloud/client';
import { aClaimedDevice, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { buildDashboard, CHROMIUM, describeWithBrowser, serveFiles } from '../support/dashboard-browser.js';
import { DAY, MINUTE, ingestAll, iso, type TelemetryRecordBody } from '../support/telemetry.js';

type Health = components['schemas']['BatteryHealthResponse'];

const FIVE_MINUTES = 5 * MINUTE;

/**
 * `days` of a 100 Ah battery every 5 minutes up to `now`: charged by the sun by day (stopping when
 * full), drained by a 7 A load at night, so its SoC runs above 90 % and below 20 % each day; hot
 * on the second day (above 45 °C at noon); cell voltages and a daily soh. A 15 A load runs in the
 * last 20 minutes, so that there is a time to empty whatever the hour. The records sit half-way
 * between 5-minute marks, as the main dashboard test's do.
 */
function solarBattery(now: number, days: number): TelemetryRecordBody[] {
  const records: TelemetryRecordBody[] = [];
  let soc = 60;
  const count = (days * DAY) / FIVE_MINUTES;
  for (let k = count - 1; k >= 0; k -= 1) {
    const at = now - FIVE_MINUTES / 2 - k * FIVE_MINUTES;
    const day = Math.floor((count - 1 - k) / (DAY / FIVE_MINUTES));
    const hour = new Date(at).getUTCHours() + new Date(at).getUTCMinutes() / 60;
    const sun = Math.max(0, Math.sin((Math.PI * (hour - 6)) / 12));
    let current = round(sun * 30 * (1 + 0.1 * Math.sin(day * 2.1)) - 7 + 0.5 * Math.sin(k * 1.3), 2);
    if (soc >= 100 && current > 0) current = 0;
    if (k < 4) current = -15;
    soc = Math.min(100, Math.max(2, soc + (current * 5) / 60));
    const voltage = round(12.6 + soc / 100 + current * 0.01, 3);
    records.push({
      ts: iso(at),
      metrics: {
        current,
        voltage,
        soc: round(soc, 1),
        temperature: round(20 + 14 * sun + (day === 1 ? 16 * sun : 0) + 0.4 * Math.sin(k * 0.7), 1),
        cellVoltageMax: round(voltage / 4 + 0.004 + 0.01 * sun, 4),
        cellVoltageMin: round(voltage / 4 - 0.004, 4),
        ...(k % 72 === 0 ? { soh: round(97.5 - day * 0.2, 2) } : {}),
      },
    });
  }
  return records;
}

function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

/** The health figures the page shows one each of, in dd[data-health=<name>] data-value. */
const HEALTH_FIGURES = ['timeAboveSoc90Sec', 'timeBelowSoc20Sec', 'timeAboveTemperature45Sec', 'minSoc', 'maxTemperature', 'maxCellImbalanceV', 'equivalentFullCycles'] as const;

describeWithBrowser('the dashboard batteries browser test')('the reference dashboard (examples/dashboard): batteries on the device page, in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let site: { origin: string; close: () => Promise<void> };
  let outDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'dcs-dashboard-batteries-'));
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

  async function aSignedInCustomer(): Promise<SignedInCustomer & SignedIn> {
    const customer = await aVerifiedCustomer(t);
    return { ...customer, headers: customerAuth(customer.accessToken) };
  }

  /** The dashboard signed in through its form, on the page of `deviceId`; errors of the page and its console collected. */
  async function devicePage(customer: SignedInCustomer, deviceId: string): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(site.origin);
    await page.locator('form.sign-in input[name=email]').fill(customer.email);
    await page.locator('form.sign-in input[name=password]').fill(customer.password);
    await page.locator('form.sign-in button[type=submit]').click();
    await page.locator(`table.devices tr[data-device-id="${deviceId}"] a`).click();
    await page.locator(`.device-page[data-device-id="${deviceId}"]`).waitFor();
    return { page, errors };
  }

  function screenshot(page: Page, name: string): Promise<Buffer> {
    mkdirSync('test-output', { recursive: true });
    return page.screenshot({ path: join('test-output', `dashboard-${name}.png`), fullPage: true });
  }

  /** The range the page asked for (the section says it): the last 30 whole UTC days. */
  async function rangeOf(page: Page): Promise<{ from: string; to: string }> {
    const section = page.locator('section.batteries');
    return { from: (await section.getAttribute('data-from'))!, to: (await section.getAttribute('data-to'))! };
  }

  async function healthShown(card: Locator): Promise<Record<string, number | null>> {
    return card.locator('dd[data-health]').evaluateAll((figures) =>
      Object.fromEntries(figures.map((figure) => [figure.getAttribute('data-health'), figure.hasAttribute('data-value') ? Number(figure.getAttribute('data-value')) : null])),
    );
  }

  it('the owner sets a profile through the form; the page shows it, time to empty or full, charge per day and the health figures the API answers for the same 30 days', async () => {
    const owner = await aSignedInCustomer();
    const { body: device, registered } = await aClaimedDevice(t, owner);
    const deviceId = device.deviceId;
    const now = Date.now();
    const records = solarBattery(now, 4);
    await ingestAll(t.api, registered.accessToken, records);

    const { page, errors } = await devicePage(owner, deviceId);
    const card = page.locator('section.batteries article.battery[data-battery-id="main"]');
    await card.and(page.locator('[data-profile="none"]')).waitFor();
    expect(await card.locator('p.empty', { hasText: 'No profile' }).isVisible()).toBe(true);
    expect(await card.locator('[data-time-to-empty], [data-time-to-full]').count()).toBe(0);

    // The form is open while there is no profile.
    const form = card.locator('form.battery-profile');
    await form.locator('input[name=name]').fill('  Roof bank ');
    await form.locator('select[name=chemistry]').selectOption('lfp');
    await form.locator('input[name=nominalVoltage]').fill('12.8');
    await form.locator('input[name=capacityAh]').fill('100');
    await form.locator('button[type=submit]').click();
    await card.and(page.locator('[data-profile="set"]')).waitFor();

    const profile = { name: 'Roof bank', chemistry: 'lfp', nominalVoltage: 12.8, capacityAh: 100 };
    const listed = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries', { params: { path: { deviceId } }, headers: owner.headers });
    expect(listed.data!.items).toHaveLength(1);
    const [battery] = listed.data!.items;
    expect(battery.profile).toEqual({ ...profile, updatedAt: expect.any(String) });
    const shownProfile = await card.locator('dd[data-profile-field]').evaluateAll((fields) => Object.fromEntries(fields.map((field) => [field.getAttribute('data-profile-field'), field.getAttribute('data-value')])));
    expect(shownProfile).toEqual({ name: 'Roof bank', chemistry: 'lfp', nominalVoltage: '12.8', capacityAh: '100' });
    expect(await card.locator('h3').innerText()).toBe('Roof bank (main)');
    expect(await card.locator('dd[data-profile-field="capacityAh"]').innerText()).toBe('100 Ah');

    // Discharging at the end of the trace: a time to empty, no time to full.
    expect(battery.timeToEmptySec).toBeGreaterThan(0);
    expect(battery.timeToFullSec).toBeUndefined();
    expect(Number(await card.locator('[data-time-to-empty]').getAttribute('data-seconds'))).toBe(battery.timeToEmptySec);
    expect(await card.locator('[data-time-to-empty]').innerText()).toMatch(/^Empty in \d/);
    expect(await card.locator('[data-time-to-full]').count()).toBe(0);

    const range = await rangeOf(page);
    expect(Date.parse(range.to) - Date.parse(range.from)).toBe(30 * DAY);
    expect(Date.parse(range.from) % DAY).toBe(0);
    const path = { deviceId, batteryId: 'main' };
    const energy = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/energy', { params: { path, query: { ...range, bucket: '1d' } }, headers: owner.headers });
    expect(energy.response.status).toBe(200);
    const days = energy.data!.points;
    expect(days).toHaveLength(30);
    // The trace's days (5 UTC days at most) charged and discharged; the days before are empty.
    const recordDays = new Set(records.map((record) => record.ts.slice(0, 10)));
    expect(days.filter((day) => day.chargedAh > 0 && day.dischargedAh > 0).map((day) => day.ts.slice(0, 10))).toEqual(expect.arrayContaining([...recordDays].slice(1, -1)));
    expect(days.filter((day) => day.coverage > 0).map((day) => day.ts.slice(0, 10))).toEqual([...recordDays]);

    const rows = card.locator('table.energy tbody tr');
    const shownDays = await rows.evaluateAll((trs) =>
      trs.map((tr) => ({
        ts: tr.getAttribute('data-day'),
        chargedAh: Number(tr.getAttribute('data-charged-ah')),
        dischargedAh: Number(tr.getAttribute('data-discharged-ah')),
        equivalentFullCycles: tr.hasAttribute('data-cycles') ? Number(tr.getAttribute('data-cycles')) : null,
      })),
    );
    expect(shownDays).toEqual(days.map(({ ts, chargedAh, dischargedAh, equivalentFullCycles }) => ({ ts, chargedAh, dischargedAh, equivalentFullCycles })));
    expect(days.every((day) => day.equivalentFullCycles === day.dischargedAh / 100)).toBe(true);
    const busiest = days.reduce((most, day) => (day.chargedAh > most.chargedAh ? day : most));
    await card.locator('details.energy-days summary').click();
    expect(await card.locator(`table.energy tr[data-day="${busiest.ts}"] td`).nth(1).innerText()).toBe(`${busiest.chargedAh.toFixed(2)} Ah`);
    expect(await card.locator('figure.energy-chart canvas').count()).toBeGreaterThan(0);

    const health = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path, query: range }, headers: owner.headers });
    expect(health.response.status).toBe(200);
    const figures: Health = health.data!;
    // The trace reaches every figure: the comparison below cannot pass on an empty answer.
    expect(figures.timeAboveSoc90Sec).toBeGreaterThan(0);
    expect(figures.timeBelowSoc20Sec).toBeGreaterThan(0);
    expect(figures.timeAboveTemperature45Sec).toBeGreaterThan(0);
    expect(figures.depthOfDischargeHistogram.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
    expect(figures.soh.length).toBeGreaterThan(0);
    expect(await healthShown(card)).toEqual({ ...Object.fromEntries(HEALTH_FIGURES.map((name) => [name, figures[name]])), soh: figures.soh.at(-1)!.value });
    expect(await card.locator('.dod .bar').evaluateAll((bars) => bars.map((bar) => [Number(bar.getAttribute('data-bin')), Number(bar.getAttribute('data-count'))]))).toEqual(
      figures.depthOfDischargeHistogram.map((count, bin) => [bin, count]),
    );
    expect(await card.locator('dd[data-health="minSoc"]').innerText()).toBe(`${figures.minSoc!.toFixed(1)} %`);

    // Edited: the form holds the stored profile; a new capacity counts the cycles anew.
    await card.locator('.profile-editor summary', { hasText: 'Edit profile' }).click();
    expect(await form.locator('input[name=name]').inputValue()).toBe('Roof bank');
    expect(await form.locator('input[name=nominalVoltage]').inputValue()).toBe('12.8');
    await form.locator('input[name=capacityAh]').fill('200');
    await form.locator('button[type=submit]').click();
    await card.locator('dd[data-profile-field="capacityAh"][data-value="200"]').waitFor();
    expect(await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-cycles'))))).toEqual(days.map((day) => day.dischargedAh / 200));
    const rehealth = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path, query: range }, headers: owner.headers });
    expect(rehealth.data!.equivalentFullCycles).toBe(figures.equivalentFullCycles! / 2);
    expect(Number(await card.locator('dd[data-health="equivalentFullCycles"]').getAttribute('data-value'))).toBe(rehealth.data!.equivalentFullCycles);
    expect((await t.db.query('SELECT name, capacity_ah FROM battery_profiles WHERE device_id = $1', [deviceId])).rows).toEqual([{ name: 'Roof bank', capacity_ah: 200 }]);

    expect(await page.locator('#notice').isHidden()).toBe(true);
    await screenshot(page, 'batteries');
    expect(errors).toEqual([]);
  });

  it('a viewer sees a profile set ahead of the first record, without the form, and says plainly that there is no data yet', async () => {
    const owner = await aSignedInCustomer();
    const viewer = await aSignedInCustomer();
    const { body: device } = await aClaimedDevice(t, owner);
    const deviceId = device.deviceId;
    const shared = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body: { email: viewer.email, role: 'viewer' }, headers: owner.headers });
    expect(shared.response.status).toBe(201);
    const put = await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}', {
      params: { path: { deviceId, batteryId: 'main' } },
      body: { name: 'Spare bank', chemistry: 'agm', nominalVoltage: 24, capacityAh: 210 },
      headers: owner.headers,
    });
    expect(put.response.status).toBe(200);

    const { page, errors } = await devicePage(viewer, deviceId);
    const card = page.locator('section.batteries article.battery[data-battery-id="main"][data-profile="set"]');
    await card.waitFor();
    // The device's detail (which says the viewer's access) has arrived too.
    await page.locator('.facts .badge').waitFor();
    expect(await card.locator('dd[data-profile-field="chemistry"]').getAttribute('data-value')).toBe('agm');
    expect(await card.locator('dd[data-profile-field="nominalVoltage"]').innerText()).toBe('24 V');
    expect(await card.locator('.profile-editor').count()).toBe(1);
    expect(await card.locator('.profile-editor').isHidden()).toBe(true);
    expect(await card.locator('p.empty', { hasText: 'No charge recorded in the last 30 days' }).isVisible()).toBe(true);
    expect(await card.locator('p.empty', { hasText: 'No records in the last 30 days' }).isVisible()).toBe(true);
    expect(await card.locator('table.energy').isHidden()).toBe(true);
    expect(await card.locator('dl.health').isHidden()).toBe(true);
    expect(await card.locator('[data-time-to-empty], [data-time-to-full]').count()).toBe(0);

    // The owner's own device without a battery: no card, a sentence instead.
    const bare = await aClaimedDevice(t, owner);
    const ownerPage = await devicePage(owner, bare.body.deviceId);
    await ownerPage.page.locator('section.batteries p.empty', { hasText: 'No batteries yet' }).waitFor();
    expect(await ownerPage.page.locator('section.batteries article.battery').count()).toBe(0);

    await screenshot(page, 'batteries-viewer');
    expect(errors).toEqual([]);
    expect(ownerPage.errors).toEqual([]);
  });
});
