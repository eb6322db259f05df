import { ContractViolation, contractCheck } from '../support/contract.js';

/** The check every e2e answer goes through must itself catch mismatches. */
describe('contract check of responses (test/support/contract.ts)', () => {
  const me = { userId: '5f0c6a8e-2b1d-4c3e-9f7a-1b2c3d4e5f60', email: 'ada@example.com', emailVerified: true, role: 'customer', alertEmails: true };

  function check(status: number, body: unknown, contentType = 'application/json', schemaPath = '/api/v1/users/me') {
    const request = new Request(`http://localhost${schemaPath}`, { method: 'GET' });
    const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers: body === undefined ? {} : { 'content-type': contentType } });
    return contractCheck.onResponse!({ request, response, schemaPath, options: {}, id: 'test', params: {} } as never);
  }

  it('passes a documented answer', async () => {
    await expect(check(200, me)).resolves.toBeUndefined();
  });

  it.each([
    ['a missing member', { ...me, email: undefined }],
    ['a member of the wrong type', { ...me, emailVerified: 'yes' }],
    ['an undeclared member', { ...me, password: 'x' }],
  ])('refuses %s', async (_name, body) => {
    await expect(check(200, body)).rejects.toBeInstanceOf(ContractViolation);
  });

  it('refuses a status the operation does not list, a wrong content type, and an operation not in the document', async () => {
    await expect(check(418, { type: 'x' }, 'application/problem+json')).rejects.toThrow(/does not list this status/);
    await expect(check(200, me, 'text/plain')).rejects.toThrow(/content type text\/plain is not documented/);
    await expect(check(200, me, 'application/json', '/api/v1/nowhere')).rejects.toThrow(/not in openapi.json/);
  });

  it('refuses an error answer that is not a problem document', async () => {
    await expect(check(401, { message: 'no' }, 'application/problem+json')).rejects.toBeInstanceOf(ContractViolation);
  });

  const problem = (status: number, code: string) => ({
    type: `urn:device-cloud:problem:${code.toLowerCase().replaceAll('_', '-')}`,
    title: 'A title',
    status,
    detail: 'A detail.',
    instance: '/api/v1/users/me',
    code,
    requestId: '9b2f3c1e-6d3a-4c47-9a34-0f1d1e2b7c55',
  });

  it('passes a problem document whose code the operation lists for its status', async () => {
    await expect(check(401, problem(401, 'UNAUTHORIZED'), 'application/problem+json')).resolves.toBeUndefined();
    await expect(check(503, problem(503, 'SERVICE_UNAVAILABLE'), 'application/problem+json')).resolves.toBeUndefined();
  });

  it.each([
    ['a code of another operation', 401, 'INVALID_CREDENTIALS'],
    ['a code of another status', 401, 'FORBIDDEN'],
    ['a code that does not exist', 401, 'NOT_A_CODE'],
  ])('refuses a problem document with %s', async (_name, status, code) => {
    await expect(check(status, problem(status, code), 'application/problem+json')).rejects.toThrow(/problem code .* is not one the document lists for this operation and status \(UNAUTHORIZED\)/);
  });

  it('refuses a problem document whose status member is not the status of the answer', async () => {
    await expect(check(401, problem(403, 'UNAUTHORIZED'), 'application/problem+json')).rejects.toThrow(/does not match its documented schema/);
  });

  it('takes a text answer (text/csv) as the string its schema describes, and still refuses an undocumented content type', async () => {
    const schemaPath = '/api/v1/dashboard/devices/{deviceId}/telemetry/export';
    const exportAnswer = (contentType: string) =>
      contractCheck.onResponse!({
        request: new Request('http://localhost/api/v1/dashboard/devices/gw-0001/telemetry/export', { method: 'GET' }),
        response: new Response('ts,batteryId,soc\r\n2026-11-21T12:00:00.000Z,main,52.1\r\n', { status: 200, headers: { 'content-type': contentType } }),
        schemaPath,
        options: {},
        id: 'test',
        params: {},
      } as never);

    await expect(exportAnswer('text/csv; charset=utf-8')).resolves.toBeUndefined();
    await expect(exportAnswer('application/json')).rejects.toThrow(/content type application\/json is not documented/);
  });
});
