import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { signUp, type Customer } from '../support/customers.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

/**
 * The link in the verification mail, as a developer meets it: no PUBLIC_BASE_URL, the service on a
 * port of its own (not 3000), the link opened in a browser. It must lead to this service, at the
 * port it listens on, and confirm the address there.
 */
describe('the verification link without PUBLIC_BASE_URL', () => {
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

  const verifiedAt = async (customer: Customer) =>
    (await t.db.query<{ email_verified_at: Date | null }>('SELECT email_verified_at FROM users WHERE id = $1', [customer.userId])).rows[0].email_verified_at;

  /** The link exactly as the mail prints it. */
  async function linkFor(customer: Customer): Promise<string> {
    const mail = await sink.waitForMessage(customer.email);
    const link = /^https?:\/\/\S+$/m.exec(mail.text)?.[0];
    if (!link) throw new Error(`no link in the mail:\n${mail.text}`);
    return link;
  }

  it('points at the address the service listens on, and opening it shows "Address confirmed" and verifies the account', async () => {
    expect(new URL(t.baseUrl).port).not.toBe('3000');
    const customer = await signUp(t);
    const link = await linkFor(customer);
    expect(link).toMatch(new RegExp(`^${t.baseUrl.replace(/\./g, '\\.')}/verify-email\\?token=[A-Za-z0-9_-]{43}$`));
    expect(await verifiedAt(customer)).toBeNull();

    const page = await fetch(link);

    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    // Served under the same CSP as everything else (script-src 'self'): the page needs no script.
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<h1>Address confirmed</h1>');
    expect(html).not.toMatch(/<script|\son\w+=/i);
    expect(await verifiedAt(customer)).toBeInstanceOf(Date);
  });

  it('opened a second time: 400 with a page that says the link is not valid, and the account stays as it was', async () => {
    const customer = await signUp(t);
    const link = await linkFor(customer);
    expect((await fetch(link)).status).toBe(200);
    const confirmed = await verifiedAt(customer);

    const again = await fetch(link);

    expect(again.status).toBe(400);
    expect(again.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await again.text()).toContain('<h1>Link not valid</h1>');
    expect(await verifiedAt(customer)).toEqual(confirmed);
  });

  it.each([
    ['no token', '/verify-email'],
    ['an unknown token', `/verify-email?token=${'A'.repeat(43)}`],
    ['an empty token', '/verify-email?token='],
    ['two tokens', '/verify-email?token=a&token=b'],
    ['an overlong token', `/verify-email?token=${'A'.repeat(300)}`],
  ])('with %s: 400 with the "not valid" page, and no account is verified', async (_case, path) => {
    const customer = await signUp(t);
    await sink.waitForMessage(customer.email);

    const page = await fetch(`${t.baseUrl}${path}`);

    expect(page.status).toBe(400);
    expect(await page.text()).toContain('<h1>Link not valid</h1>');
    expect(await verifiedAt(customer)).toBeNull();
  });
});
