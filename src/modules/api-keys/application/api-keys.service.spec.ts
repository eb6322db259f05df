import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import type { AuditContext } from '../../audit/index.js';

const BY: AuditContext = { actor: { kind: 'user', userId: 'user-ada', apiKeyId: null }, clientAddress: '203.0.113.7' };
import { loadEnv } from '../../../config/env.js';
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { InvalidBearerTokenError, NotFoundError, RateLimitedError } from '../../../shared/domain-error.js';
import { InMemoryFailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { MAX_API_KEYS_PER_USER } from '../domain/api-key.js';
import { TooManyApiKeysError } from '../domain/api-keys.errors.js';
import { ApiKeysService } from './api-keys.service.js';
import { InMemoryApiKeyStore } from '../../../../test/fakes/api-keys/in-memory-api-key-store.js';

const ADA = { kind: 'user', id: 'user-ada' } as const;
const BOB = { kind: 'user', id: 'user-bob' } as const;
const START = new Date('2026-11-27T09:00:00.000Z');
const ADDRESS = '198.51.100.7';

function aService(envSource: Record<string, string> = {}) {
  const clock = new FixedClock(START);
  const store = new InMemoryApiKeyStore();
  const hasher = new SecretHasher('p'.repeat(32));
  const service = new ApiKeysService(store, hasher, new InMemoryFailureLimiter(() => clock.now().getTime()), loadEnv(envSource), clock, new RecordingAuditLog());
  return { service, store, hasher, clock };
}

describe('ApiKeysService', () => {
  it('creates a dck_ key of 256 random bits and stores only its HMAC', async () => {
    const { service, store, hasher } = aService();

    const { apiKey, key } = await service.create(ADA, ' Home Assistant ', 'read', BY);

    expect(key).toMatch(/^dck_[A-Za-z0-9_-]{43}$/);
    expect(apiKey).toMatchObject({ holder: ADA, name: 'Home Assistant', scope: 'read', createdAt: START, lastUsedAt: null });
    expect(store.rows.get(apiKey.keyId)?.keyHash).toBe(hasher.hmac(key));
    expect(JSON.stringify([...store.rows.values()])).not.toContain(key.slice(4));
  });

  it(`refuses key ${MAX_API_KEYS_PER_USER + 1} of an account, not of another`, async () => {
    const { service } = aService();
    for (let i = 0; i < MAX_API_KEYS_PER_USER; i++) await service.create(ADA, `key ${i}`, 'read', BY);

    await expect(service.create(ADA, 'one more', 'read', BY)).rejects.toBeInstanceOf(TooManyApiKeysError);
    await expect(service.create(BOB, 'first', 'read', BY)).resolves.toBeDefined();
  });

  it('authenticates a key as its account, a customer with the key and its scope, never an administrator', async () => {
    const { service, store } = aService();
    store.verified.add('user-ada');
    const { apiKey, key } = await service.create(ADA, 'script', 'write', BY);

    await expect(service.authenticate(key, ADDRESS)).resolves.toEqual(new CustomerPrincipal('user-ada', 'customer', true, null, { keyId: apiKey.keyId, scope: 'write', holder: 'user' }));
  });

  it("authenticates an organization's key as the organization, whatever became of the member who made it", async () => {
    const { service } = aService();
    const { apiKey, key } = await service.create({ kind: 'organization', id: 'org-acme' }, 'ERP', 'read', BY);

    await expect(service.authenticate(key, ADDRESS)).resolves.toEqual(new CustomerPrincipal('org-acme', 'customer', true, null, { keyId: apiKey.keyId, scope: 'read', holder: 'organization' }));
    await expect(service.revoke({ kind: 'user', id: 'org-acme' }, apiKey.keyId, BY)).rejects.toBeInstanceOf(NotFoundError);
  });

  it(`counts an organization's keys apart from its members' own`, async () => {
    const { service } = aService();
    for (let i = 0; i < MAX_API_KEYS_PER_USER; i++) await service.create(ADA, `key ${i}`, 'read', BY);

    await expect(service.create({ kind: 'organization', id: 'user-ada' }, 'shared', 'read', BY)).resolves.toBeDefined();
  });

  it('refuses an unknown, malformed or revoked key as an invalid bearer token', async () => {
    const { service } = aService();
    const { apiKey, key } = await service.create(ADA, 'script', 'read', BY);
    await service.revoke(ADA, apiKey.keyId, BY);

    for (const presented of [key, `dck_${'A'.repeat(43)}`, 'dck_', `${key}x`]) {
      await expect(service.authenticate(presented, ADDRESS)).rejects.toBeInstanceOf(InvalidBearerTokenError);
    }
  });

  it("revoking another account's key is NotFound and leaves it working", async () => {
    const { service } = aService();
    const { apiKey, key } = await service.create(ADA, 'script', 'read', BY);

    await expect(service.revoke(BOB, apiKey.keyId, BY)).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.authenticate(key, ADDRESS)).resolves.toBeInstanceOf(CustomerPrincipal);
  });

  it('records the last use at most once a minute', async () => {
    const { service, store, clock } = aService();
    const { apiKey, key } = await service.create(ADA, 'script', 'read', BY);

    await service.authenticate(key, ADDRESS);
    clock.advanceSec(59);
    await service.authenticate(key, ADDRESS);
    expect({ touches: store.touches, lastUsedAt: store.rows.get(apiKey.keyId)?.apiKey.lastUsedAt }).toEqual({ touches: 1, lastUsedAt: START });

    clock.advanceSec(1);
    await service.authenticate(key, ADDRESS);
    expect({ touches: store.touches, lastUsedAt: store.rows.get(apiKey.keyId)?.apiKey.lastUsedAt }).toEqual({ touches: 2, lastUsedAt: clock.now() });
  });

  it('after LOGIN_MAX_FAILURES_PER_ADDRESS failures refuses every key from that address, a valid one too, until the window ends', async () => {
    const { service, clock } = aService({ LOGIN_MAX_FAILURES_PER_ADDRESS: '3', LOGIN_FAILURE_WINDOW_SEC: '60' });
    const { key } = await service.create(ADA, 'script', 'read', BY);
    for (let i = 0; i < 3; i++) await expect(service.authenticate(`dck_${String(i).repeat(43)}`, ADDRESS)).rejects.toBeInstanceOf(InvalidBearerTokenError);

    await expect(service.authenticate(key, ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
    await expect(service.authenticate(key, '203.0.113.9')).resolves.toBeInstanceOf(CustomerPrincipal);

    clock.advanceSec(60);
    await expect(service.authenticate(key, ADDRESS)).resolves.toBeInstanceOf(CustomerPrincipal);
  });
});
