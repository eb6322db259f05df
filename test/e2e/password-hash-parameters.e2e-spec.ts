import * as argon2 from 'argon2';
import { ARGON2_OPTIONS } from '../../src/shared/crypto/secret-hasher.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, loginCustomer } from '../support/customers.js';
import { expectProblem } from '../support/problems.js';

/** The parameters a stored argon2id hash names ($argon2id$v=19$m=…,p=…,t=…$…), in the order m, t, p. */
function parametersOf(hash: string): string | undefined {
  const named = /^\$argon2id\$v=19\$([^$]+)\$/.exec(hash)?.[1];
  const value = Object.fromEntries((named ?? '').split(',').map((pair) => pair.split('=')));
  return named ? `m=${value.m},t=${value.t},p=${value.p}` : undefined;
}

describe('password hashes: argon2id at 7 MiB, 5 passes, 1 lane; older hashes replaced at login', () => {
  let t: TestApp;

  beforeAll(async () => {
    // The service's own cost, not the cheaper one the other tests' service hashes with.
    t = await createTestApp({}, { passwordHashCost: ARGON2_OPTIONS });
  });
  afterAll(async () => {
    await t.close();
  });

  const storedHash = async (userId: string) => (await t.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [userId])).rows[0].password_hash;

  it('a new account is hashed with the current parameters', async () => {
    const customer = await aVerifiedCustomer(t);
    expect(parametersOf(await storedHash(customer.userId))).toBe('m=7168,t=5,p=1');
  });

  it('a hash made with the library default (64 MiB, 3 passes, 4 lanes) still verifies, and the login replaces it; a wrong password replaces nothing', async () => {
    const customer = await aVerifiedCustomer(t);
    const older = await argon2.hash(customer.password, { type: argon2.argon2id });
    expect(parametersOf(older)).toBe('m=65536,t=3,p=4');
    await t.db.query('UPDATE users SET password_hash = $1 WHERE id = $2', [older, customer.userId]);

    expectProblem(await t.api.POST('/api/v1/auth/login', { body: { email: customer.email, password: `${customer.password}x` } }), 401, 'INVALID_CREDENTIALS');
    expect(await storedHash(customer.userId)).toBe(older);

    await loginCustomer(t.api, customer.email, customer.password);
    const replaced = await storedHash(customer.userId);
    expect(parametersOf(replaced)).toBe('m=7168,t=5,p=1');
    expect(await argon2.verify(replaced, customer.password)).toBe(true);
    // The next login verifies the new hash and leaves it as it is.
    await loginCustomer(t.api, customer.email, customer.password);
    expect(await storedHash(customer.userId)).toBe(replaced);
  });
});
