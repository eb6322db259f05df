import fc from 'fast-check';
import { DomainError } from '../../../shared/domain-error.js';
import {
  applyPatch,
  CONFIG_KEYS,
  effectiveConfig,
  INITIAL_FLEET_DEFAULTS,
  validateConfigPatch,
  type ConfigOverrides,
  type ConfigPatch,
  type ConfigSettings,
  type DeviceConfigState,
  type FleetDefaults,
} from './device-config.js';

const withNull = { allowNull: true };
const withoutNull = { allowNull: false };

/** The fields a refusal names, in order; fails the test unless `run` throws VALIDATION_FAILED. */
function refusedFields(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
    return ((error as DomainError).details.errors ?? []).map((fieldError) => fieldError.field);
  }
  throw new Error('expected a VALIDATION_FAILED error, nothing was thrown');
}

/** Independent oracle of the bounds: every valid value of every key. */
const validValue: { [K in keyof ConfigSettings]: fc.Arbitrary<ConfigSettings[K]> } = {
  telemetryIntervalSec: fc.integer({ min: 5, max: 86_400 }),
  uploadBatchSize: fc.integer({ min: 1, max: 500 }),
  otaCheckIntervalSec: fc.integer({ min: 60, max: 604_800 }),
  otaChannel: fc.constantFrom('stable' as const, 'beta' as const),
  logLevel: fc.constantFrom('error' as const, 'warn' as const, 'info' as const, 'debug' as const),
  logUpload: fc.constantFrom('off' as const, 'errors' as const, 'all' as const),
  otaMinSoc: fc.integer({ min: 0, max: 100 }),
  otaTemperatureRange: fc
    .tuple(fc.integer({ min: -40, max: 85 }), fc.integer({ min: -40, max: 85 }))
    .filter(([a, b]) => a !== b)
    .map(([a, b]) => ({ min: Math.min(a, b), max: Math.max(a, b) })),
};

const anOverrides: fc.Arbitrary<ConfigOverrides> = fc.record(validValue, { requiredKeys: [] });
const aPatch: fc.Arbitrary<ConfigPatch> = fc.record(
  {
    telemetryIntervalSec: fc.option(validValue.telemetryIntervalSec, { nil: null }),
    uploadBatchSize: fc.option(validValue.uploadBatchSize, { nil: null }),
    otaCheckIntervalSec: fc.option(validValue.otaCheckIntervalSec, { nil: null }),
    otaChannel: fc.option(validValue.otaChannel, { nil: null }),
    logLevel: fc.option(validValue.logLevel, { nil: null }),
    otaMinSoc: fc.option(validValue.otaMinSoc, { nil: null }),
    otaTemperatureRange: fc.option(validValue.otaTemperatureRange, { nil: null }),
  },
  { requiredKeys: [] },
);

describe('device configuration', () => {
  describe('validateConfigPatch', () => {
    it.each([
      ['every key at its lower bound', { telemetryIntervalSec: 5, uploadBatchSize: 1, otaCheckIntervalSec: 60, otaChannel: 'stable', logLevel: 'error', otaMinSoc: 0, otaTemperatureRange: { min: -40, max: -39 } }],
      ['every key at its upper bound', { telemetryIntervalSec: 86_400, uploadBatchSize: 500, otaCheckIntervalSec: 604_800, otaChannel: 'beta', logLevel: 'debug', otaMinSoc: 100, otaTemperatureRange: { min: 84, max: 85 } }],
      ['one key', { logLevel: 'info' }],
    ])('accepts %s and returns the patch as given', (_name, body) => {
      expect(validateConfigPatch(body, withNull)).toEqual(body);
      expect(validateConfigPatch(body, withoutNull)).toEqual(body);
    });

    it('accepts null (back to the fleet default) only when allowed', () => {
      expect(validateConfigPatch({ telemetryIntervalSec: null, logLevel: 'warn' }, withNull)).toEqual({ telemetryIntervalSec: null, logLevel: 'warn' });
      expect(refusedFields(() => validateConfigPatch({ telemetryIntervalSec: null, logLevel: 'warn' }, withoutNull))).toEqual(['telemetryIntervalSec']);
    });

    it.each([
      ['telemetryIntervalSec', 4],
      ['telemetryIntervalSec', 86_401],
      ['telemetryIntervalSec', 30.5],
      ['telemetryIntervalSec', '30'],
      ['telemetryIntervalSec', Number.NaN],
      ['telemetryIntervalSec', Number.POSITIVE_INFINITY],
      ['uploadBatchSize', 0],
      ['uploadBatchSize', 501],
      ['uploadBatchSize', -1],
      ['otaCheckIntervalSec', 59],
      ['otaCheckIntervalSec', 604_801],
      ['otaCheckIntervalSec', true],
      ['otaChannel', 'alpha'],
      ['otaChannel', 'STABLE'],
      ['otaChannel', 1],
      ['logLevel', 'trace'],
      ['logLevel', ['debug']],
      ['logLevel', {}],
      ['otaMinSoc', -1],
      ['otaMinSoc', 101],
      ['otaMinSoc', 40.5],
      ['otaTemperatureRange', { min: 45, max: 0 }],
      ['otaTemperatureRange', { min: 10, max: 10 }],
      ['otaTemperatureRange', { min: 0 }],
      ['otaTemperatureRange', { min: 0, max: 45, unit: 'C' }],
      ['otaTemperatureRange', { min: 0.5, max: 45 }],
      ['otaTemperatureRange', { min: -41, max: 45 }],
      ['otaTemperatureRange', { min: 0, max: 86 }],
      ['otaTemperatureRange', '0-45'],
      ['otaTemperatureRange', [0, 45]],
    ])('refuses %s = %p, naming the key', (key, value) => {
      expect(refusedFields(() => validateConfigPatch({ [key]: value }, withNull))).toEqual([key]);
      expect(refusedFields(() => validateConfigPatch({ [key]: value }, withoutNull))).toEqual([key]);
    });

    it('names every bad key at once, valid keys next to them do not hide them', () => {
      const fields = refusedFields(() => validateConfigPatch({ uploadBatchSize: 100, telemetryIntervalSec: 0, colour: 'red', logLevel: 'loud' }, withNull));

      expect(fields).toEqual(['telemetryIntervalSec', 'colour', 'logLevel']);
    });

    it.each([['colour'], ['toString'], ['constructor'], ['hasOwnProperty'], ['__proto__'], ['TelemetryIntervalSec']])('refuses the unknown key %j', (key) => {
      const body = JSON.parse(`{${JSON.stringify(key)}: 1}`) as unknown;

      expect(refusedFields(() => validateConfigPatch(body, withNull))).toEqual([key]);
    });

    it('names an unknown key by its first 64 characters', () => {
      const key = 'k'.repeat(200);

      expect(refusedFields(() => validateConfigPatch({ [key]: 1 }, withNull))).toEqual(['k'.repeat(64)]);
    });

    it.each([
      ['an empty object', {}],
      ['null', null],
      ['an array', [{ logLevel: 'debug' }]],
      ['a string', 'logLevel=debug'],
      ['a number', 5],
      ['undefined', undefined],
    ])('refuses %s as the body, naming (root)', (_name, body) => {
      expect(refusedFields(() => validateConfigPatch(body, withNull))).toEqual(['(root)']);
    });

    it('accepts exactly the values inside the bounds (property)', () => {
      fc.assert(
        fc.property(anOverrides, (overrides) => {
          fc.pre(Object.keys(overrides).length > 0);
          expect(validateConfigPatch(overrides, withoutNull)).toEqual(overrides);
        }),
      );
      const intKeys = [
        ['telemetryIntervalSec', 5, 86_400],
        ['uploadBatchSize', 1, 500],
        ['otaCheckIntervalSec', 60, 604_800],
        ['otaMinSoc', 0, 100],
      ] as const;
      for (const [key, min, max] of intKeys) {
        fc.assert(
          fc.property(fc.integer({ min: -1_000_000, max: 2_000_000 }), (value) => {
            const inside = value >= min && value <= max;
            if (inside) expect(validateConfigPatch({ [key]: value }, withNull)).toEqual({ [key]: value });
            else expect(refusedFields(() => validateConfigPatch({ [key]: value }, withNull))).toEqual([key]);
          }),
        );
      }
    });
  });

  describe('applyPatch', () => {
    it('a value sets the key, null removes it, keys not named stay', () => {
      const current: ConfigOverrides = { telemetryIntervalSec: 30, logLevel: 'debug' };

      const result = applyPatch(current, { telemetryIntervalSec: 10, logLevel: null, otaChannel: 'beta' });

      expect(result).toEqual({ overrides: { telemetryIntervalSec: 10, otaChannel: 'beta' }, changed: true });
      expect(Object.keys(result.overrides)).not.toContain('logLevel');
    });

    it('leaves the current overrides untouched', () => {
      const current: ConfigOverrides = { telemetryIntervalSec: 30 };

      applyPatch(current, { telemetryIntervalSec: null, uploadBatchSize: 5 });

      expect(current).toEqual({ telemetryIntervalSec: 30 });
    });

    it.each([
      ['restating a value', { telemetryIntervalSec: 30 }, { telemetryIntervalSec: 30 }],
      ['clearing a key that is not set', { telemetryIntervalSec: 30 }, { logLevel: null }],
      ['restating one key and clearing an unset one', { telemetryIntervalSec: 30, otaChannel: 'beta' }, { otaChannel: 'beta', uploadBatchSize: null }],
      ['clearing on empty overrides', {}, { telemetryIntervalSec: null, uploadBatchSize: null, otaCheckIntervalSec: null, otaChannel: null, logLevel: null }],
    ] as Array<[string, ConfigOverrides, ConfigPatch]>)('%s: unchanged', (_name, current, patch) => {
      expect(applyPatch(current, patch)).toEqual({ overrides: current, changed: false });
    });

    it.each([
      ['a new key', {}, { logLevel: 'warn' }],
      ['another value', { uploadBatchSize: 10 }, { uploadBatchSize: 11 }],
      ['clearing a set key', { uploadBatchSize: 10 }, { uploadBatchSize: null }],
    ] as Array<[string, ConfigOverrides, ConfigPatch]>)('%s: changed', (_name, current, patch) => {
      expect(applyPatch(current, patch).changed).toBe(true);
    });

    it('matches a key-by-key model, and a patch applied twice changes nothing the second time (property)', () => {
      fc.assert(
        fc.property(anOverrides, aPatch, (current, patch) => {
          const expected: Record<string, unknown> = { ...current };
          for (const key of CONFIG_KEYS) {
            if (!(key in patch)) continue;
            if (patch[key] === null) delete expected[key];
            else expected[key] = patch[key];
          }
          const changed = CONFIG_KEYS.some((key) => expected[key] !== current[key]);

          const once = applyPatch(current, patch);
          expect(once).toEqual({ overrides: expected, changed });
          expect(applyPatch(once.overrides, patch)).toEqual({ overrides: expected, changed: false });
        }),
        { numRuns: 500 },
      );
    });
  });

  describe('effectiveConfig', () => {
    const defaults: FleetDefaults = { settings: INITIAL_FLEET_DEFAULTS, revision: 4, updatedAt: new Date('2026-11-20T10:00:00.000Z') };
    const registeredAt = new Date('2026-11-19T08:00:00.000Z');

    it('a device without overrides runs the fleet defaults; version is the defaults revision plus the device revision', () => {
      const device: DeviceConfigState = { overrides: {}, revision: 0, updatedAt: null };

      expect(effectiveConfig(defaults, device, registeredAt)).toEqual({ ...INITIAL_FLEET_DEFAULTS, version: 4, updatedAt: defaults.updatedAt });
    });

    it('overrides win key by key', () => {
      const device: DeviceConfigState = { overrides: { telemetryIntervalSec: 15, otaChannel: 'beta' }, revision: 3, updatedAt: new Date('2026-11-21T09:00:00.000Z') };

      expect(effectiveConfig(defaults, device, registeredAt)).toEqual({
        ...INITIAL_FLEET_DEFAULTS,
        telemetryIntervalSec: 15,
        otaChannel: 'beta',
        version: 7,
        updatedAt: new Date('2026-11-21T09:00:00.000Z'),
      });
    });

    it('updatedAt is the later of the last change of the defaults and of the device (its registration when never changed)', () => {
      const later = new Date('2026-11-22T00:00:00.000Z');
      const earlier = new Date('2026-11-18T00:00:00.000Z');

      expect(effectiveConfig(defaults, { overrides: {}, revision: 0, updatedAt: null }, later).updatedAt).toEqual(later);
      expect(effectiveConfig(defaults, { overrides: {}, revision: 0, updatedAt: null }, earlier).updatedAt).toEqual(defaults.updatedAt);
      expect(effectiveConfig(defaults, { overrides: {}, revision: 1, updatedAt: earlier }, registeredAt).updatedAt).toEqual(defaults.updatedAt);
      expect(effectiveConfig(defaults, { overrides: {}, revision: 1, updatedAt: later }, registeredAt).updatedAt).toEqual(later);
    });

    it('the version grows with either revision, so any change that affects the device gives a new ETag (property)', () => {
      fc.assert(
        fc.property(anOverrides, fc.nat(1000), fc.nat(1000), fc.integer({ min: 1, max: 5 }), fc.boolean(), (overrides, fleetRevision, deviceRevision, step, onFleet) => {
          const fleet = { ...defaults, revision: fleetRevision };
          const device: DeviceConfigState = { overrides, revision: deviceRevision, updatedAt: null };
          const before = effectiveConfig(fleet, device, registeredAt);
          const after = onFleet
            ? effectiveConfig({ ...fleet, revision: fleetRevision + step }, device, registeredAt)
            : effectiveConfig(fleet, { ...device, revision: deviceRevision + step }, registeredAt);

          expect(before.version).toBe(fleetRevision + deviceRevision);
          expect(after.version).toBe(before.version + step);
          for (const key of CONFIG_KEYS) expect(before[key]).toBe(overrides[key] ?? INITIAL_FLEET_DEFAULTS[key]);
        }),
      );
    });
  });
});
