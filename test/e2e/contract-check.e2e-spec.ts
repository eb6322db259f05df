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
});
