import { randomBytes } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { bearer } from './builders.js';
import type { ApiClient, TestApp } from './create-test-app.js';

export type SignupBody = components['schemas']['SignupRequest'];
export type TokenPair = components['schemas']['TokenResponse'];

/** A signed-up account: what the API answered plus the password used. */
export interface Customer {
  userId: string;
  email: string;
  password: string;
}

/** A customer who verified the address and is signed in. */
export interface SignedInCustomer extends Customer, TokenPair {}

/** An address no other test uses, e.g. `ada-3f9a1c07@example.com`. */
export function anEmail(prefix = 'customer'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}@example.com`;
}

/** A valid signup body with a fresh address and a random 27-character password. */
export function aSignup(overrides: Partial<SignupBody> = {}): SignupBody {
  return { email: anEmail(), password: `pw-${randomBytes(12).toString('hex')}`, ...overrides };
}

/**
 * Signs up through the API; fails the test on any answer but 201. The answer names only the
 * address (it is the same for a taken one), so the account's id is read from the database.
 */
export async function signUp(t: Pick<TestApp, 'api' | 'db'>, overrides: Partial<SignupBody> = {}): Promise<Customer> {
  const body = aSignup(overrides);
  const { data, response } = await t.api.POST('/api/v1/auth/signup', { body });
  if (response.status !== 201 || !data) throw new Error(`signup of ${body.email} answered ${response.status}`);
  return { userId: await userIdOf(t, data.email), email: data.email, password: body.password };
}

/** The id of the account with this (normalised) address; fails the test when there is none. */
export async function userIdOf(t: Pick<TestApp, 'db'>, email: string): Promise<string> {
  const { rows } = await t.db.query<{ id: string }>('SELECT id FROM users WHERE email = $1', [email]);
  if (!rows[0]) throw new Error(`no account has the address ${email}`);
  return rows[0].id;
}

/** Logs in through the API; fails the test on any answer but 200. */
export async function loginCustomer(api: ApiClient, email: string, password: string): Promise<TokenPair> {
  const { data, response } = await api.POST('/api/v1/auth/login', { body: { email, password } });
  if (response.status !== 200 || !data) throw new Error(`login of ${email} answered ${response.status}`);
  return data;
}

/**
 * Signs up through the API, marks the address verified directly in the database (a fixture
 * shortcut for tests whose subject is not verification; accounts.e2e-spec covers the real link),
 * and logs in.
 */
export async function aVerifiedCustomer(t: Pick<TestApp, 'api' | 'db'>, overrides: Partial<SignupBody> = {}): Promise<SignedInCustomer> {
  const customer = await signUp(t, overrides);
  await t.db.query('UPDATE users SET email_verified_at = now() WHERE id = $1', [customer.userId]);
  return { ...customer, ...(await loginCustomer(t.api, customer.email, customer.password)) };
}

/** Authorization header for a customer (or administrator) access token. */
export function customerAuth(accessToken: string): { authorization: string } {
  return bearer(accessToken);
}
