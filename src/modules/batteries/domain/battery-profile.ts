/** Battery chemistries a profile may name. */
export const CHEMISTRIES = ['lfp', 'nmc', 'lead-acid', 'agm', 'gel', 'other'] as const;
export type Chemistry = (typeof CHEMISTRIES)[number];

export const PROFILE_NAME_MAX_LENGTH = 64;
/** Bounds of a plausible battery: a single cell up to a stationary bank. */
export const NOMINAL_VOLTAGE_RANGE = { min: 1, max: 1500 } as const;
export const CAPACITY_AH_RANGE = { min: 0.1, max: 100_000 } as const;

/** What the owner (or an installer) says one battery of a device is. */
export interface BatteryProfile {
  name: string;
  chemistry: Chemistry;
  /** V */
  nominalVoltage: number;
  /** Ah */
  capacityAh: number;
  updatedAt: Date;
}
