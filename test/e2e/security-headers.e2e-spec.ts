import { createTestApp, type TestApp } from '../support/create-test-app.js';

const DASHBOARD = 'https://dash.example.com';

describe('security headers and CORS', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ CORS_ORIGINS: `${DASHBOARD}, https://staging.dash.example.com` });
  });
  afterAll(async () => {
    await t.close();
  });

  it('every answer carries helmet headers: nosniff, frame denial, a strict CSP, no X-Powered-By', async () => {
    for (const path of ['/api/v1/users/me', '/health/live', '/docs']) {
      const response = await fetch(`${t.baseUrl}${path}`);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(response.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      expect(response.headers.get('x-powered-by')).toBeNull();
    }
  });

  it('served over plain HTTP, the CSP does not tell browsers to upgrade requests to https (Swagger UI would load none of its assets)', async () => {
    for (const path of ['/docs', '/health/live']) {
      const csp = (await fetch(`${t.baseUrl}${path}`)).headers.get('content-security-policy');
      expect(csp).toContain("default-src 'self'");
      expect(csp).not.toContain('upgrade-insecure-requests');
    }
  });

  it('a preflight from a listed origin is allowed, with the headers gateways and dashboards use', async () => {
    const response = await fetch(`${t.baseUrl}/api/v1/dashboard/devices`, {
      method: 'OPTIONS',
      headers: { origin: DASHBOARD, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });

    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(response.headers.get('access-control-allow-headers')).toContain('authorization');
    expect(response.headers.get('access-control-allow-methods')).toContain('PATCH');
  });

  it('a simple request from a listed origin exposes ETag and X-Request-Id to the page', async () => {
    const response = await fetch(`${t.baseUrl}/health/live`, { headers: { origin: DASHBOARD } });

    expect(response.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(response.headers.get('access-control-expose-headers')).toContain('etag');
    expect(response.headers.get('access-control-expose-headers')).toContain('x-request-id');
  });

  it('any other origin gets no CORS grant', async () => {
    const preflight = await fetch(`${t.baseUrl}/api/v1/dashboard/devices`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    const simple = await fetch(`${t.baseUrl}/health/live`, { headers: { origin: 'https://evil.example' } });

    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('without CORS_ORIGINS no origin is granted', async () => {
    const plain = await createTestApp();
    try {
      const response = await fetch(`${plain.baseUrl}/health/live`, { headers: { origin: DASHBOARD } });
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await plain.close();
    }
  });
});
