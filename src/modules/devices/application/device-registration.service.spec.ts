import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { DeviceSnapshots } from './device-snapshots.js';
import { InMemoryFleetDefaultsStore } from '../../../../test/fakes/devices/in-memory-fleet-defaults-store.js';
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { JwtService } from '@nestjs/jwt';
import { loadEnv } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { TEST_HASH_COST } from '../../../../test/support/hash-cost.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { InMemoryFailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';
import { INITIAL_FLEET_DEFAULTS } from '../domain/device-config.js';
import { ClaimCodeRequiredError, DeviceAlreadyRegisteredError, InvalidCredentialsError } from '../domain/device.errors.js';
import { ACCESS_TOKEN_TYPE, DEVICE_TOKEN_AUDIENCE, DeviceTokens, TOKEN_ISSUER, type DeviceTokenClaims } from './device-tokens.js';
import { DeviceRegistrationService, type RegisterDeviceCommand } from './device-registration.service.js';
import { DevicePrincipal } from '../../../auth/principals.js';
import { InMemoryDeviceRepository, InMemoryDeviceSnapshotSource } from '../../../../test/fakes/devices/in-memory-device-repository.js';
import { InMemoryRefreshTokenStore } from '../../../../test/fakes/shared/in-memory-refresh-token-store.js';
import { RegistrationAllowlistStore } from '../domain/registration-allowlist.store.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';

/** Open registration: the allowlist is never consulted. */
class NoAllowlist extends RegistrationAllowlistStore {
  async allows(): Promise<boolean> {
    return true;
  }
  async importEntries(): Promise<number> {
    return 0;
  }
}

const START = new Date('2026-11-21T12:00:00.000Z');
const ADDRESS = '203.0.113.7';
const CLAIM_CODE = 'QUICK-AMBER-FALCON';

function setUp(overrides: Record<string, string> = {}) {
  const env = loadEnv(overrides);
  const clock = new FixedClock(START);
  const repository = new InMemoryDeviceRepository();
  const hasher = new SecretHasher('x'.repeat(32), TEST_HASH_COST);
  const limiter = new InMemoryFailureLimiter(() => clock.now().getTime());
  const jwt = new JwtService({ secret: 'y'.repeat(32) });
  const refreshTokens = new InMemoryRefreshTokenStore();
  const tokens = new DeviceTokens(jwt, refreshTokens, hasher, env);
  const service = new DeviceRegistrationService(repository, new NoAllowlist(), tokens, hasher, limiter, clock, env, new DeviceSnapshots(new InMemoryDeviceSnapshotSource(repository), new ChangeFeed('postgres://unused'), new MemoryCaches(env)), new InMemoryFleetDefaultsStore());
  const stored = async (deviceId: string) => {
    const device = await repository.findById(deviceId);
    if (!device) throw new Error(`${deviceId} is not stored`);
    return device;
  };
  const verifyAccessToken = (token: string) =>
    jwt.verifyAsync<DeviceTokenClaims & { aud: string; iss: string; exp: number; iat: number }>(token, {
      audience: DEVICE_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      algorithms: ['HS256'],
      // Tokens are issued at the service clock's time.
      clockTimestamp: clock.now().getTime() / 1000,
    });
  return { env, clock, repository, refreshTokens, hasher, jwt, service, stored, verifyAccessToken };
}

function aRegistration(overrides: Partial<RegisterDeviceCommand> = {}): RegisterDeviceCommand {
  return { deviceId: 'gw-0001', hardwareId: 'esp32s3-7c:df:a1:0b:22:c4', firmwareVersion: '0.1.4', claimCode: CLAIM_CODE, ...overrides };
}

const aLegacyRegistration = (overrides: Partial<RegisterDeviceCommand> = {}) => aRegistration({ firmwareVersion: '0.1.3', claimCode: undefined, ...overrides });

describe('DeviceRegistrationService', () => {
  describe('register', () => {
    it('stores a new device with an HMAC of its secret and an argon2id hash of its claim code', async () => {
      const { service, hasher, stored, verifyAccessToken } = setUp();

      const registration = await service.register(aRegistration(), ADDRESS);

      const device = await stored('gw-0001');
      expect(device.toState()).toMatchObject({
        deviceId: 'gw-0001',
        hardwareId: 'esp32s3-7c:df:a1:0b:22:c4',
        firmwareVersion: '0.1.4',
        tokenVersion: 1,
        registeredAt: START,
        credentialsUsedAt: null,
        ownerId: null,
      });
      expect(registration.deviceSecret.length).toBeGreaterThanOrEqual(43);
      expect(device.secretHash).toBe(hasher.hmac(registration.deviceSecret));
      expect(device.secretHash).not.toContain(registration.deviceSecret);
      expect(hasher.hmacMatches(registration.deviceSecret, device.secretHash)).toBe(true);
      expect(device.claimCodeHash).toMatch(/^\$argon2id\$/);
      expect(await hasher.verifyLowEntropy(CLAIM_CODE, device.claimCodeHash)).toBe(true);
      expect(await hasher.verifyLowEntropy('QUICK-AMBER-FALCOM', device.claimCodeHash)).toBe(false);
      expect(registration.config).toEqual({ ...INITIAL_FLEET_DEFAULTS, version: 1, updatedAt: START });
      expect(registration.tokens).toMatchObject({ tokenType: 'Bearer', expiresIn: 3600 });
      const claims = await verifyAccessToken(registration.tokens.accessToken);
      expect(claims).toMatchObject({ sub: 'gw-0001', tv: 1, aud: DEVICE_TOKEN_AUDIENCE, iss: TOKEN_ISSUER });
      expect(claims.exp - claims.iat).toBe(3600);
      expect(registration.tokens.refreshToken).toMatch(/^dcr_[A-Za-z0-9_-]{43}$/);
    });

    it('signs access tokens typed as at+jwt with HS256', async () => {
      const { service, jwt } = setUp();

      const { tokens } = await service.register(aRegistration(), ADDRESS);

      expect(jwt.decode(tokens.accessToken, { complete: true })).toMatchObject({ header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE } });
    });

    it('hashes the claim code in its canonical upper-case form', async () => {
      const { service, hasher, stored } = setUp();

      await service.register(aRegistration({ claimCode: 'quick-amber-falcon' }), ADDRESS);

      expect(await hasher.verifyLowEntropy(CLAIM_CODE, (await stored('gw-0001')).claimCodeHash)).toBe(true);
    });

    it('stores a legacy device without a claim code hash', async () => {
      const { service, stored } = setUp();

      await service.register(aLegacyRegistration(), ADDRESS);

      expect((await stored('gw-0001')).isLegacy).toBe(true);
    });

    it.each(['0.1.4', '0.1.10', '1.0'])('refuses firmware %s without a claim code and stores nothing', async (firmwareVersion) => {
      const { service, repository } = setUp();

      await expect(service.register(aRegistration({ firmwareVersion, claimCode: undefined }), ADDRESS)).rejects.toBeInstanceOf(ClaimCodeRequiredError);
      await expect(service.register(aRegistration({ firmwareVersion, claimCode: undefined }), ADDRESS)).rejects.toMatchObject({ code: 'CLAIM_CODE_REQUIRED' });
      expect(await repository.findById('gw-0001')).toBeNull();
    });

    it('refuses a malformed claim code or firmware version before storing anything', async () => {
      const { service, repository } = setUp();

      await expect(service.register(aRegistration({ claimCode: 'ABCD-EFG1' }), ADDRESS)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      await expect(service.register(aRegistration({ firmwareVersion: 'v1.2' }), ADDRESS)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(await repository.findById('gw-0001')).toBeNull();
    });

    describe('a retry after a lost response', () => {
      it('gets new credentials within the window while the first ones are unused, voiding the earlier ones', async () => {
        const { service, clock, hasher, stored, refreshTokens } = setUp();
        const first = await service.register(aRegistration(), ADDRESS);
        clock.advanceSec(300);

        const retry = await service.register(aRegistration(), ADDRESS);

        const device = await stored('gw-0001');
        expect(device.tokenVersion).toBe(2);
        expect(retry.deviceSecret).not.toBe(first.deviceSecret);
        expect(hasher.hmacMatches(retry.deviceSecret, device.secretHash)).toBe(true);
        expect(hasher.hmacMatches(first.deviceSecret, device.secretHash)).toBe(false);
        expect(device.registeredAt).toEqual(START);
        expect(retry.config.updatedAt).toEqual(START);
        expect(refreshTokens.of('gw-0001').map((token) => token.revokedAt !== null)).toEqual([true, false]);

        await expect(service.login('gw-0001', first.deviceSecret, ADDRESS)).rejects.toBeInstanceOf(InvalidCredentialsError);
        await expect(service.refresh(first.tokens.refreshToken, ADDRESS)).rejects.toMatchObject({ name: 'InvalidRefreshTokenError', code: 'INVALID_TOKEN' });
        await expect(service.authenticate({ sub: 'gw-0001', tv: 1 })).rejects.toBeInstanceOf(UnauthorizedError);
        await expect(service.login('gw-0001', retry.deviceSecret, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      });

      it('is accepted for a legacy device that again sends no claim code', async () => {
        const { service, stored } = setUp();
        await service.register(aLegacyRegistration(), ADDRESS);

        await service.register(aLegacyRegistration(), ADDRESS);

        expect((await stored('gw-0001')).tokenVersion).toBe(2);
      });

      it('is accepted exactly at the end of the window', async () => {
        const { service, clock, env, stored } = setUp();
        await service.register(aRegistration(), ADDRESS);
        clock.advanceSec(env.REGISTRATION_RETRY_WINDOW_SEC);

        await service.register(aRegistration(), ADDRESS);

        expect((await stored('gw-0001')).tokenVersion).toBe(2);
      });

      it.each<[string, RegisterDeviceCommand]>([
        ['other hardware', aRegistration({ hardwareId: 'esp32s3-00:00:00:00:00:00' })],
        ['another claim code', aRegistration({ claimCode: 'SLOW-GREEN-HERON' })],
        ['no claim code from claim-code-less firmware', aRegistration({ firmwareVersion: '0.1.3', claimCode: undefined })],
      ])('is refused with %s, changing nothing', async (_case, command) => {
        const { service, hasher, stored } = setUp();
        const first = await service.register(aRegistration(), ADDRESS);

        await expect(service.register(command, ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);

        const device = await stored('gw-0001');
        expect(device.tokenVersion).toBe(1);
        expect(hasher.hmacMatches(first.deviceSecret, device.secretHash)).toBe(true);
      });

      it('is refused for a legacy device when a claim code is sent', async () => {
        const { service, stored } = setUp();
        await service.register(aLegacyRegistration(), ADDRESS);

        await expect(service.register(aLegacyRegistration({ claimCode: CLAIM_CODE }), ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);
        expect((await stored('gw-0001')).tokenVersion).toBe(1);
      });

      it('is refused after the window', async () => {
        const { service, clock, env, stored } = setUp();
        await service.register(aRegistration(), ADDRESS);
        clock.advanceSec(env.REGISTRATION_RETRY_WINDOW_SEC + 1);

        await expect(service.register(aRegistration(), ADDRESS)).rejects.toMatchObject({ code: 'DEVICE_ALREADY_REGISTERED' });
        expect((await stored('gw-0001')).tokenVersion).toBe(1);
      });

      it.each<[string, (service: DeviceRegistrationService, deviceSecret: string, refreshToken: string) => Promise<unknown>]>([
        ['login', (service, deviceSecret) => service.login('gw-0001', deviceSecret, ADDRESS)],
        ['refresh', (service, _secret, refreshToken) => service.refresh(refreshToken, ADDRESS)],
        ['an authenticated request', (service) => service.authenticate({ sub: 'gw-0001', tv: 1 })],
      ])('is refused once the credentials were used by %s', async (_use, use) => {
        const { service, stored } = setUp();
        const first = await service.register(aRegistration(), ADDRESS);
        await use(service, first.deviceSecret, first.tokens.refreshToken);
        expect((await stored('gw-0001')).credentialsUsedAt).toEqual(START);

        await expect(service.register(aRegistration(), ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);
        expect((await stored('gw-0001')).tokenVersion).toBe(1);
      });

      it('counts refusals per device and is rate limited after LOGIN_MAX_FAILURES_PER_DEVICE of them', async () => {
        const { service, env, clock } = setUp();
        await service.register(aLegacyRegistration(), ADDRESS);
        const stranger = aLegacyRegistration({ hardwareId: 'someone-else' });
        for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_DEVICE; i++) {
          await expect(service.register(stranger, `198.51.100.${i}`)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);
        }

        await expect(service.register(stranger, '198.51.100.200')).rejects.toBeInstanceOf(RateLimitedError);
        await expect(service.register(aLegacyRegistration(), ADDRESS)).rejects.toMatchObject({
          code: 'RATE_LIMITED',
          details: { retryAfterSec: env.LOGIN_FAILURE_WINDOW_SEC },
        });
        await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0002' }), ADDRESS)).resolves.toMatchObject({ deviceSecret: expect.any(String) });

        clock.advanceSec(env.LOGIN_FAILURE_WINDOW_SEC);
        await expect(service.register(stranger, ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);
      });
    });
  });

  describe('register: new devices per client address', () => {
    it('creates REGISTRATION_MAX_PER_ADDRESS devices from one address, then 429 for the rest of the window, storing nothing', async () => {
      const { service, repository, clock } = setUp({ REGISTRATION_MAX_PER_ADDRESS: '3', REGISTRATION_WINDOW_SEC: '3600' });
      for (let i = 1; i <= 3; i++) await service.register(aLegacyRegistration({ deviceId: `gw-000${i}` }), ADDRESS);
      clock.advanceSec(600);

      await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0004' }), ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: 3000 } });
      expect(await repository.findById('gw-0004')).toBeNull();
      await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0005' }), '198.51.100.1')).resolves.toMatchObject({ deviceSecret: expect.any(String) });
      clock.advanceSec(3000);
      await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0004' }), ADDRESS)).resolves.toMatchObject({ deviceSecret: expect.any(String) });
    });

    it('counts only devices created: retries and refused registrations of known ids use none of the budget', async () => {
      const { service } = setUp({ REGISTRATION_MAX_PER_ADDRESS: '2' });
      await service.register(aLegacyRegistration(), ADDRESS);
      await service.register(aLegacyRegistration(), ADDRESS);
      await expect(service.register(aLegacyRegistration({ hardwareId: 'someone-else' }), ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyRegisteredError);

      await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0002' }), ADDRESS)).resolves.toMatchObject({ deviceSecret: expect.any(String) });
      await expect(service.register(aLegacyRegistration({ deviceId: 'gw-0003' }), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
    });
  });

  describe('login', () => {
    it('issues tokens for the right secret and records the first use of the credentials', async () => {
      const { service, clock, stored, verifyAccessToken } = setUp();
      const { deviceSecret } = await service.register(aRegistration(), ADDRESS);
      clock.advanceSec(60);

      const tokens = await service.login('gw-0001', deviceSecret, ADDRESS);

      expect(await verifyAccessToken(tokens.accessToken)).toMatchObject({ sub: 'gw-0001', tv: 1 });
      expect((await stored('gw-0001')).credentialsUsedAt).toEqual(new Date(START.getTime() + 60_000));
      clock.advanceSec(60);
      await service.login('gw-0001', deviceSecret, ADDRESS);
      expect((await stored('gw-0001')).credentialsUsedAt).toEqual(new Date(START.getTime() + 60_000));
    });

    it('answers an unknown device and a wrong secret alike', async () => {
      const { service, stored } = setUp();
      const { deviceSecret } = await service.register(aRegistration(), ADDRESS);

      await expect(service.login('gw-9999', deviceSecret, ADDRESS)).rejects.toBeInstanceOf(InvalidCredentialsError);
      await expect(service.login('gw-0001', deviceSecret + 'x', ADDRESS)).rejects.toBeInstanceOf(InvalidCredentialsError);
      await expect(service.login('gw-0001', '', ADDRESS)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      expect((await stored('gw-0001')).credentialsUsedAt).toBeNull();
    });

    it('never locks a device out: after many wrong secrets from other addresses the right one still logs in', async () => {
      const { service, env } = setUp();
      const { deviceSecret } = await service.register(aRegistration(), ADDRESS);
      for (let i = 0; i < 5 * env.LOGIN_MAX_FAILURES_PER_DEVICE; i++) {
        await expect(service.login('gw-0001', `wrong-${i}`, `198.51.100.${i}`)).rejects.toBeInstanceOf(InvalidCredentialsError);
      }

      await expect(service.login('gw-0001', deviceSecret, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('blocks an address after LOGIN_MAX_FAILURES_PER_ADDRESS failures across devices', async () => {
      const { service, env } = setUp();
      const { deviceSecret } = await service.register(aRegistration(), ADDRESS);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_ADDRESS; i++) {
        await expect(service.login(`gw-guess-${i}`, 'wrong', '192.0.2.66')).rejects.toBeInstanceOf(InvalidCredentialsError);
      }

      await expect(service.login('gw-0001', deviceSecret, '192.0.2.66')).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.login('gw-0001', deviceSecret, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('refresh', () => {
    it('rotates: the new pair works, the presented token is marked rotated', async () => {
      const { service, clock, refreshTokens, verifyAccessToken } = setUp();
      const { tokens: first } = await service.register(aRegistration(), ADDRESS);
      clock.advanceSec(10);

      const second = await service.refresh(first.refreshToken, ADDRESS);

      expect(second.refreshToken).not.toBe(first.refreshToken);
      expect(await verifyAccessToken(second.accessToken)).toMatchObject({ sub: 'gw-0001', tv: 1 });
      expect(refreshTokens.of('gw-0001').map((token) => token.rotatedAt)).toEqual([new Date(START.getTime() + 10_000), null]);
      await expect(service.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('treats reuse of a rotated token after the grace as theft: voids every token of the device, the secret still logs in', async () => {
      const { service, env, clock, stored, refreshTokens } = setUp();
      const { deviceSecret, tokens: first } = await service.register(aRegistration(), ADDRESS);
      const second = await service.refresh(first.refreshToken, ADDRESS);
      clock.advanceSec(env.REFRESH_REUSE_GRACE_SEC + 1);

      await expect(service.refresh(first.refreshToken, ADDRESS)).rejects.toMatchObject({ name: 'InvalidRefreshTokenError', code: 'INVALID_TOKEN' });

      expect((await stored('gw-0001')).tokenVersion).toBe(2);
      expect(refreshTokens.of('gw-0001').every((token) => token.revokedAt !== null)).toBe(true);
      await expect(service.refresh(second.refreshToken, ADDRESS)).rejects.toMatchObject({ code: 'INVALID_TOKEN' });
      await expect(service.authenticate({ sub: 'gw-0001', tv: 1 })).rejects.toBeInstanceOf(UnauthorizedError);
      const fresh = await service.login('gw-0001', deviceSecret, ADDRESS);
      await expect(service.refresh(fresh.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('a repeat within the grace (the gateway lost the answer) gets the same pair, byte for byte, and the device stays valid', async () => {
      const { service, clock, stored, refreshTokens, verifyAccessToken } = setUp();
      const { tokens: first } = await service.register(aRegistration(), ADDRESS);
      clock.advanceSec(10);
      const second = await service.refresh(first.refreshToken, ADDRESS);
      clock.advanceSec(20);

      await expect(service.refresh(first.refreshToken, ADDRESS)).resolves.toEqual(second);

      expect(await verifyAccessToken(second.accessToken)).toMatchObject({ iat: START.getTime() / 1000 + 10 });
      expect((await stored('gw-0001')).tokenVersion).toBe(1);
      expect(refreshTokens.of('gw-0001').map((token) => token.revokedAt)).toEqual([null, null]);
      await expect(service.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses an unknown token', async () => {
      const { service } = setUp();

      await expect(service.refresh('dcr_unknown', ADDRESS)).rejects.toMatchObject({ name: 'InvalidRefreshTokenError', code: 'INVALID_TOKEN' });
    });

    it('refuses an expired token, and accepts it a moment before', async () => {
      const { service, clock, env } = setUp();
      const { tokens } = await service.register(aRegistration(), ADDRESS);
      const other = await service.register(aRegistration({ deviceId: 'gw-0002' }), ADDRESS);
      clock.advanceSec(env.DEVICE_REFRESH_TOKEN_TTL_DAYS * 86_400 - 1);

      await expect(service.refresh(other.tokens.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      clock.advanceSec(1);
      await expect(service.refresh(tokens.refreshToken, ADDRESS)).rejects.toMatchObject({ code: 'INVALID_TOKEN' });
    });

    it('rate limits an address after LOGIN_MAX_FAILURES_PER_ADDRESS unknown tokens', async () => {
      const { service, env } = setUp();
      const { tokens } = await service.register(aRegistration(), ADDRESS);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_ADDRESS; i++) {
        await expect(service.refresh(`dcr_guess-${i}`, '192.0.2.66')).rejects.toMatchObject({ code: 'INVALID_TOKEN' });
      }

      await expect(service.refresh(tokens.refreshToken, '192.0.2.66')).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.refresh(tokens.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('authenticate', () => {
    it('accepts the current token version and records the first use of the credentials', async () => {
      const { service, clock, stored } = setUp();
      await service.register(aRegistration(), ADDRESS);
      clock.advanceSec(5);

      await expect(service.authenticate({ sub: 'gw-0001', tv: 1 })).resolves.toEqual(new DevicePrincipal('gw-0001'));
      expect((await stored('gw-0001')).credentialsUsedAt).toEqual(new Date(START.getTime() + 5000));
    });

    it('refuses a token of an earlier version', async () => {
      const { service, env, clock } = setUp();
      const { tokens } = await service.register(aRegistration(), ADDRESS);
      await service.refresh(tokens.refreshToken, ADDRESS);
      clock.advanceSec(env.REFRESH_REUSE_GRACE_SEC + 1);
      await expect(service.refresh(tokens.refreshToken, ADDRESS)).rejects.toMatchObject({ code: 'INVALID_TOKEN' });

      await expect(service.authenticate({ sub: 'gw-0001', tv: 1 })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate({ sub: 'gw-0001', tv: 2 })).resolves.toEqual(new DevicePrincipal('gw-0001'));
    });

    it('refuses a token of a device that does not exist', async () => {
      const { service } = setUp();

      await expect(service.authenticate({ sub: 'gw-9999', tv: 1 })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    });
  });
});
