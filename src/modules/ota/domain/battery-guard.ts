/** Why a poll held an update back. */
export type HeldBackReason = 'LOW_SOC' | 'TEMPERATURE';

/** The newest soc and temperature of each battery of a device. */
export interface BatteryReadings {
  socs: number[];
  temperatures: number[];
}

/**
 * Whether an update waits for the batteries: any battery's latest soc below `minSoc`, or any
 * battery's latest temperature outside the range (ends included), holds it back; SoC first. A
 * device that reports neither metric is never held back.
 */
export function heldBackBy(readings: BatteryReadings, minSoc: number, range: { min: number; max: number }): HeldBackReason | null {
  if (readings.socs.some((soc) => soc < minSoc)) return 'LOW_SOC';
  if (readings.temperatures.some((temperature) => temperature < range.min || temperature > range.max)) return 'TEMPERATURE';
  return null;
}
