import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { aClaimedDevice, aRegisteredDevice, claim, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { anEmail, aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { buildDashboard, CHROMIUM, describeWithBrowser, serveFiles } from '../support/dashboard-browser.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';

type Role = 'owner' | 'admin' | 'operator' | 'viewer';

/**
 * The reference dashboard's organizations (examples/dashboard), built by Vite and served from an
 * origin of its own, in Debian's chromium against the real service, as the other dashboard browser
 * tests: the switcher in the header (your organizations with your role; one filters the device
 * list, the choice survives a reload, one you no longer belong to falls back to all), creating an
 * organization, and its members page (inviting by address with a role, changing a role, removing a
 * member, leaving; the controls only for those the service lets use them; refusals shown).
 */
describeWithBrowser('the dashboard organizations browser test')('the reference dashboard (examples/dashboard): organizations, in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let site: { origin: string; close: () => Promise<void> };
  let outDir: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'dcs-dashboard-organizations-'));
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

  /** A verified customer, signed in through the API too (for set-up and checks). */
  async function aSignedInCustomer(email?: string): Promise<SignedInCustomer & SignedIn> {
    const customer = await aVerifiedCustomer(t, email ? { email } : {});
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

  function screenshot(page: Page, name: string): Promise<Buffer> {
    mkdirSync('test-output', { recursive: true });
    return page.screenshot({ path: join('test-output', `dashboard-${name}.png`), fullPage: true });
  }

  /** The switcher's options as [value, label], once it lists `count` of them ("All organizations" among them). */
  async function switcherOptions(page: Page, count: number): Promise<[string | null, string | null][]> {
    return eventually(async () => {
      const options = await page.locator('#organization option').evaluateAll((all) => all.map((option) => [option.getAttribute('value'), option.textContent] as [string | null, string | null]));
      expect(options).toHaveLength(count);
      return options;
    });
  }

  /** The device ids the list shows once it shows `organization`'s devices ('all': every one), sorted. */
  async function listed(page: Page, organization: string): Promise<string[]> {
    await page.locator(`table.devices[data-organization="${organization}"]`).waitFor();
    const ids = await page.locator('table.devices tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-device-id')));
    return ids.map(String).sort();
  }

  /** The organization's memberships as stored (table `organization_members`), oldest first. */
  async function membersOf(organizationId: string): Promise<{ email: string; role: Role }[]> {
    const { rows } = await t.db.query<{ email: string; role: Role }>('SELECT email, role FROM organization_members WHERE organization_id = $1 ORDER BY invited_at, member_id', [organizationId]);
    return rows;
  }

  /** Claims a new device into `organizationId` as `who`, through the API. */
  async function anOrganizationDevice(who: SignedIn, organizationId: string): Promise<string> {
    const { body } = await aRegisteredDevice(t);
    const claimed = await claim(t, who, { deviceId: body.deviceId, claimCode: body.claimCode, organizationId });
    expect(claimed.response.status).toBe(200);
    return body.deviceId;
  }

  const sorted = (ids: string[]) => [...ids].sort();

  it('an owner creates an organization, claims into it, switches to it, invites by address; the invitee sees it with its role, and loses its devices when removed', async () => {
    const owner = await aSignedInCustomer();
    const { body: ownDevice } = await aClaimedDevice(t, owner);
    const { page, pageErrors } = await signedInPage(owner);

    // The switcher: all, and the personal organization (its id the account's) with the owner's role.
    expect(await switcherOptions(page, 2)).toEqual([
      ['', 'All organizations'],
      [owner.userId, 'Personal (owner)'],
    ]);
    expect(await listed(page, 'all')).toEqual([ownDevice.deviceId]);

    // Created from the Organizations page: its members page opens, the owner its only member.
    await page.locator('#organizations-link').click();
    await page.locator('form.create-organization input[name=name]').fill('  Solar Installers Ltd ');
    await page.locator('form.create-organization button[type=submit]').click();
    const membersPage = page.locator('.members-page[data-role="owner"]');
    await membersPage.waitFor();
    const organizationId = (await membersPage.getAttribute('data-organization-id'))!;
    const { data: created } = await t.api.GET('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: owner.headers });
    expect(created).toMatchObject({ name: 'Solar Installers Ltd', personal: false, role: 'owner' });
    expect(await page.locator('.members h2').innerText()).toBe('Members of Solar Installers Ltd');
    expect(await page.locator('.members tbody tr').evaluateAll((rows) => rows.map((row) => [row.getAttribute('data-email'), row.getAttribute('data-role')]))).toEqual([[owner.email, 'owner']]);
    expect(await page.locator('.members tbody tr td').first().innerText()).toBe(`${owner.email} (you)`);
    // The switcher lists it, and has chosen it (the members page is the chosen organization's).
    expect(await switcherOptions(page, 3)).toEqual([
      ['', 'All organizations'],
      [owner.userId, 'Personal (owner)'],
      [organizationId, 'Solar Installers Ltd (owner)'],
    ]);
    expect(await page.locator('#organization').inputValue()).toBe(organizationId);

    // Its devices: two claimed through the API, a third through the page's form, into the organization chosen.
    const organizationDevices = [await anOrganizationDevice(owner, organizationId), await anOrganizationDevice(owner, organizationId)];
    await page.locator('a.brand').click();
    expect(await listed(page, organizationId)).toEqual(sorted(organizationDevices));
    expect(await page.locator('.devices-page h2').first().innerText()).toBe('Devices of Solar Installers Ltd');
    const claimForm = page.locator('form.claim');
    expect(await claimForm.locator('h3').innerText()).toBe('Claim a device into Solar Installers Ltd');
    const third = await aRegisteredDevice(t);
    await claimForm.locator('input[name=deviceId]').fill(third.body.deviceId);
    await claimForm.locator('input[name=claimCode]').fill(third.body.claimCode!);
    await claimForm.locator('button[type=submit]').click();
    await page.locator(`table.devices tr[data-device-id="${third.body.deviceId}"]`).waitFor();
    expect((await ownedDeviceRow(t.db, third.body.deviceId))?.owner_id).toBe(organizationId);
    organizationDevices.push(third.body.deviceId);

    // All of them, then the organization's only; the choice survives a reload.
    await page.locator('#organization').selectOption('');
    expect(await listed(page, 'all')).toEqual(sorted([ownDevice.deviceId, ...organizationDevices]));
    await page.locator('#organization').selectOption(organizationId);
    expect(await listed(page, organizationId)).toEqual(sorted(organizationDevices));
    await page.reload();
    expect(await listed(page, organizationId)).toEqual(sorted(organizationDevices));
    expect(await page.locator('#organization').inputValue()).toBe(organizationId);
    await screenshot(page, 'organization-devices');

    // The last owner cannot leave: the service's problem, as it words it, and nothing changes.
    await page.goto(`${site.origin}/#/organizations/${organizationId}`);
    await page.locator('.members-page[data-role="owner"] .members tbody tr').waitFor();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('button[data-action="leave"]').click();
    const { data: ownerItself } = await t.api.GET('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: owner.headers });
    const refusal = expectProblem(
      await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: ownerItself!.memberId } }, headers: owner.headers }),
      409,
      'LAST_OWNER',
    );
    await eventually(async () => expect(await page.locator('.members .form-error').first().innerText()).toBe(refusal.detail));
    expect(await membersOf(organizationId)).toEqual([{ email: owner.email, role: 'owner' }]);

    // An invitation to an address that has no account yet, as a viewer.
    const invitee = anEmail('installer');
    const invite = page.locator('form.invite');
    expect(await invite.locator('select[name=role] option').allInnerTexts()).toEqual(['owner', 'admin', 'operator', 'viewer']);
    expect(await invite.locator('select[name=role]').inputValue()).toBe('viewer');
    await invite.locator('input[name=email]').fill(invitee);
    await invite.locator('button[type=submit]').click();
    const inviteeRow = page.locator(`.members tr[data-email="${invitee}"]`);
    await inviteeRow.waitFor();
    expect(await inviteeRow.getAttribute('data-role')).toBe('viewer');
    expect(await invite.locator('.form-note').innerText()).toBe(`Invited ${invitee} as viewer.`);
    expect(await invite.locator('input[name=email]').inputValue()).toBe('');
    expect(await membersOf(organizationId)).toEqual([
      { email: owner.email, role: 'owner' },
      { email: invitee, role: 'viewer' },
    ]);

    // The address's account, once verified, sees the organization in its switcher with its role, and its devices.
    const member = await aSignedInCustomer(invitee);
    const { body: memberDevice } = await aClaimedDevice(t, member);
    const seen = await signedInPage(member);
    // Oldest first: the organization is older than the account.
    expect(await switcherOptions(seen.page, 3)).toEqual([
      ['', 'All organizations'],
      [organizationId, 'Solar Installers Ltd (viewer)'],
      [member.userId, 'Personal (owner)'],
    ]);
    expect(await listed(seen.page, 'all')).toEqual(sorted([memberDevice.deviceId, ...organizationDevices]));
    await seen.page.locator('#organization').selectOption(organizationId);
    expect(await listed(seen.page, organizationId)).toEqual(sorted(organizationDevices));
    // A viewer's members page: the members, and no control but Leave.
    await seen.page.locator('#organizations-link').click();
    await seen.page.locator(`.organizations tr[data-organization-id="${organizationId}"][data-role="viewer"] a`).click();
    await seen.page.locator('.members-page[data-role="viewer"]').waitFor();
    expect(await seen.page.locator('.members tbody tr').evaluateAll((rows) => rows.map((row) => [row.getAttribute('data-email'), row.getAttribute('data-role')]))).toEqual([
      [owner.email, 'owner'],
      [invitee, 'viewer'],
    ]);
    expect(await seen.page.locator('.members tbody select, .members tbody button').count()).toBe(0);
    expect(await seen.page.locator('form.invite').isHidden()).toBe(true);
    expect(await seen.page.locator('button[data-action="leave"]').isVisible()).toBe(true);
    await screenshot(seen.page, 'organization-members-viewer');

    // The owner makes the member an operator: the row, the service, and the member's switcher after a reload say so.
    await inviteeRow.locator('select[name=role]').selectOption('operator');
    await page.locator(`.members tr[data-email="${invitee}"][data-role="operator"]`).waitFor();
    expect(await membersOf(organizationId)).toContainEqual({ email: invitee, role: 'operator' });
    await seen.page.locator('a.brand').click();
    await seen.page.reload();
    expect(await listed(seen.page, organizationId)).toEqual(sorted(organizationDevices));
    expect((await switcherOptions(seen.page, 3))[1]).toEqual([organizationId, 'Solar Installers Ltd (operator)']);
    await screenshot(page, 'organization-members');

    // The owner removes the member (once confirmed): gone from the page and the service; after a
    // reload the member's switcher has it no more, the choice falls back to all, without its devices.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator(`.members tr[data-email="${invitee}"] button[data-action="remove"]`).click();
    await page.locator(`.members tr[data-email="${invitee}"]`).waitFor({ state: 'detached' });
    expect(await membersOf(organizationId)).toEqual([{ email: owner.email, role: 'owner' }]);
    await seen.page.reload();
    expect(await listed(seen.page, 'all')).toEqual([memberDevice.deviceId]);
    expect(await switcherOptions(seen.page, 2)).toEqual([
      ['', 'All organizations'],
      [member.userId, 'Personal (owner)'],
    ]);
    expect(await seen.page.locator('#organization').inputValue()).toBe('');

    expect(await seen.page.locator('#notice').isHidden()).toBe(true);
    expect(pageErrors).toEqual([]);
    expect(seen.pageErrors).toEqual([]);
  });

  it('an admin changes and removes members but not the owner, and invites no owner; a member leaves from the page', async () => {
    const owner = await aSignedInCustomer();
    const [admin, operator] = [await aSignedInCustomer(), await aSignedInCustomer()];
    const created = await t.api.POST('/api/v1/organizations', { body: { name: 'Harbour Marina' }, headers: owner.headers });
    expect(created.response.status).toBe(201);
    const { organizationId } = created.data!;
    for (const [who, role] of [[admin, 'admin'], [operator, 'operator']] as const) {
      const invited = await t.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: who.email, role }, headers: owner.headers });
      expect(invited.response.status).toBe(201);
    }
    const device = await anOrganizationDevice(owner, organizationId);

    const { page, pageErrors } = await signedInPage(admin);
    await page.goto(`${site.origin}/#/organizations/${organizationId}`);
    await page.locator('.members-page[data-role="admin"] .members tbody tr').first().waitFor();
    // The owner's row has no control for an admin; the others do, without "owner" among the roles offered.
    const ownerRow = page.locator(`.members tr[data-email="${owner.email}"]`);
    expect(await ownerRow.locator('select, button').count()).toBe(0);
    expect(await page.locator(`.members tr[data-email="${operator.email}"] select[name=role] option`).allInnerTexts()).toEqual(['admin', 'operator', 'viewer']);
    expect(await page.locator('form.invite select[name=role] option').allInnerTexts()).toEqual(['admin', 'operator', 'viewer']);

    // A validation problem names what is wrong: an address the browser lets through (no top-level domain), the service does not.
    const invite = page.locator('form.invite');
    await invite.locator('input[name=email]').fill('grace@localhost');
    await invite.locator('button[type=submit]').click();
    await eventually(async () => expect(await invite.locator('.form-error').innerText()).toBe('The request is not valid. email must be an e-mail address.'));

    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator(`.members tr[data-email="${operator.email}"] button[data-action="remove"]`).click();
    await page.locator(`.members tr[data-email="${operator.email}"]`).waitFor({ state: 'detached' });
    expect(await membersOf(organizationId)).toEqual([
      { email: owner.email, role: 'owner' },
      { email: admin.email, role: 'admin' },
    ]);

    // The admin leaves: back on the device list of all its devices, the organization gone from the switcher.
    expect(await page.locator('#organization').inputValue()).toBe(organizationId);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('button[data-action="leave"]').click();
    expect(await listed(page, 'all')).toEqual([]);
    expect(await switcherOptions(page, 2)).toEqual([
      ['', 'All organizations'],
      [admin.userId, 'Personal (owner)'],
    ]);
    expect(await membersOf(organizationId)).toEqual([{ email: owner.email, role: 'owner' }]);
    const { response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: device } }, headers: admin.headers });
    expect(response.status).toBe(404);

    expect(await page.locator('#notice').isHidden()).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
