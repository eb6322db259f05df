import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';

import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';

export type { OtaChannel };
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type LogUpload = 'off' | 'errors' | 'all';

/** The settings a gateway runs with; fleet defaults hold every key, a device overrides some. */
export interface ConfigSettings {
  telemetryIntervalSec: number;
  uploadBatchSize: number;
  otaCheckIntervalSec: number;
  otaChannel: OtaChannel;
  logLevel: LogLevel;
  /** Which log lines the gateway uploads (POST /device/logs): none, errors only, or all it logs. */
  logUpload: LogUpload;
  /** An update is offered only while the battery's latest SoC is at least this (%). */
  otaMinSoc: number;
  /** …and its latest temperature within this range (°C, both ends included). */
  otaTemperatureRange: TemperatureRange;
}

export interface TemperatureRange {
  min: number;
  max: number;
}

export type ConfigKey = keyof ConfigSettings;
export type ConfigOverrides = Partial<ConfigSettings>;
/** A change: a value sets the key, null goes back to the fleet default (or, for defaults, is refused). */
export type ConfigPatch = { [K in ConfigKey]?: ConfigSettings[K] | null };

type Rule =
  | { kind: 'int'; min: number; max: number; description: string }
  | { kind: 'enum'; values: readonly string[]; description: string }
  /** `{min, max}`, integers within [min, max] of the rule, min below max. */
  | { kind: 'range'; min: number; max: number; description: string };

/** Every key with its bounds; the OpenAPI document and the validation both read this table. */
export const CONFIG_RULES: Record<ConfigKey, Rule> = {
  telemetryIntervalSec: { kind: 'int', min: 5, max: 86_400, description: 'Seconds between telemetry samples.' },
  uploadBatchSize: { kind: 'int', min: 1, max: 500, description: 'Records per telemetry upload (the ingest accepts up to 500).' },
  otaCheckIntervalSec: { kind: 'int', min: 60, max: 604_800, description: 'Seconds between OTA checks.' },
  otaChannel: { kind: 'enum', values: ['stable', 'beta'], description: 'Release channel: beta gateways also receive stable releases.' },
  logLevel: { kind: 'enum', values: ['error', 'warn', 'info', 'debug'], description: 'How much the gateway logs locally.' },
  logUpload: { kind: 'enum', values: ['off', 'errors', 'all'], description: 'Which log lines the gateway uploads (POST /device/logs): none, errors only, or all it logs at its logLevel. A collect-logs command asks for a one-off upload whatever this says.' },
  otaMinSoc: { kind: 'int', min: 0, max: 100, description: 'GET /ota/latest holds an update back while the latest soc of any battery of the device is below this (%). A device that reports no soc is not held back.' },
  otaTemperatureRange: {
    kind: 'range',
    min: -40,
    max: 85,
    description: 'GET /ota/latest holds an update back while the latest temperature of any battery of the device lies outside this range (°C, ends included). A device that reports no temperature is not held back.',
  },
};

export const CONFIG_KEYS = Object.keys(CONFIG_RULES) as ConfigKey[];

/**
 * The fleet defaults a new installation starts with; administrators change them at runtime (the
 * config_defaults row). Migrations cannot import this, so they repeat it as the row they seed
 * (revision 1), and schema-drift.e2e-spec.ts fails unless a freshly migrated database holds
 * exactly these: a new key needs a migration that adds its default to the stored row.
 */
export const INITIAL_FLEET_DEFAULTS: ConfigSettings = {
  telemetryIntervalSec: 60,
  uploadBatchSize: 50,
  otaCheckIntervalSec: 3600,
  otaChannel: 'stable',
  logLevel: 'warn',
  logUpload: 'errors',
  otaMinSoc: 40,
  otaTemperatureRange: { min: 0, max: 45 },
};

export interface FleetDefaults {
  settings: ConfigSettings;
  revision: number;
  updatedAt: Date;
}

/** A device's own part of its configuration. */
export interface DeviceConfigState {
  overrides: ConfigOverrides;
  /** Grows with every change of the overrides. */
  revision: number;
  updatedAt: Date | null;
}

/** The document a gateway receives (register response and GET /device/config). */
export interface DeviceConfig extends ConfigSettings {
  /** Fleet revision + device revision: both only grow, so any change that affects the device raises it. */
  version: number;
  updatedAt: Date;
}

export function effectiveConfig(defaults: FleetDefaults, device: DeviceConfigState, registeredAt: Date): DeviceConfig {
  const ownUpdate = device.updatedAt ?? registeredAt;
  return {
    ...defaults.settings,
    ...device.overrides,
    version: defaults.revision + device.revision,
    updatedAt: ownUpdate > defaults.updatedAt ? ownUpdate : defaults.updatedAt,
  };
}

/** Strong validator for PATCH bodies: unknown keys, wrong types and out-of-bounds values are 400s. */
export function validateConfigPatch(body: unknown, options: { allowNull: boolean }): ConfigPatch {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationFailedError([{ field: '(root)', message: 'the body must be a JSON object' }]);
  }
  const errors: FieldError[] = [];
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const rule = (CONFIG_RULES as Record<string, Rule | undefined>)[key];
    if (!rule || !Object.prototype.hasOwnProperty.call(CONFIG_RULES, key)) {
      errors.push({ field: key.slice(0, 64), message: `${key.slice(0, 64)} is not a configuration key (known: ${CONFIG_KEYS.join(', ')})` });
      continue;
    }
    if (value === null) {
      if (options.allowNull) patch[key] = null;
      else errors.push({ field: key, message: `${key} needs a value: fleet defaults cannot be cleared` });
      continue;
    }
    if (rule.kind === 'int') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < rule.min || value > rule.max) {
        errors.push({ field: key, message: `${key} must be an integer from ${rule.min} to ${rule.max}${options.allowNull ? ', or null to use the fleet default' : ''}` });
        continue;
      }
    } else if (rule.kind === 'range') {
      if (!isRange(value, rule.min, rule.max)) {
        errors.push({ field: key, message: `${key} must be {min, max}: integers from ${rule.min} to ${rule.max}, min below max${options.allowNull ? ', or null to use the fleet default' : ''}` });
        continue;
      }
    } else if (typeof value !== 'string' || !rule.values.includes(value)) {
      errors.push({ field: key, message: `${key} must be one of ${rule.values.join(', ')}${options.allowNull ? ', or null to use the fleet default' : ''}` });
      continue;
    }
    patch[key] = value;
  }
  if (errors.length > 0) throw new ValidationFailedError(errors);
  if (Object.keys(patch).length === 0) throw new ValidationFailedError([{ field: '(root)', message: `name at least one of ${CONFIG_KEYS.join(', ')}` }]);
  return patch as ConfigPatch;
}

function isRange(value: unknown, lowest: number, highest: number): value is TemperatureRange {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  const { min, max } = value as Record<string, unknown>;
  const bounded = (x: unknown) => typeof x === 'number' && Number.isInteger(x) && x >= lowest && x <= highest;
  return keys.length === 2 && bounded(min) && bounded(max) && (min as number) < (max as number);
}

/** Overrides after a patch; `changed` is false when the patch restates what is there. */
export function applyPatch(current: ConfigOverrides, patch: ConfigPatch): { overrides: ConfigOverrides; changed: boolean } {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  // JSON text, not identity: a range is an object.
  const changed = CONFIG_KEYS.some((key) => JSON.stringify(next[key]) !== JSON.stringify((current as Record<string, unknown>)[key]));
  return { overrides: next as ConfigOverrides, changed };
}
