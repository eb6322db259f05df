/**
 * The crashes module's SQL surface: functions its migrations define for other modules' statements.
 * This file imports nothing, so any module may import it whatever the direction of its other imports.
 */

/**
 * `device_crashed(device_id, version, from, until)` → boolean: whether the device reported a crash
 * (panic, a watchdog, a CPU lockup; not a reboot reason) of that firmware version (compared
 * numerically) at a gateway time within [from, until). For release health (the ota module).
 */
export const DEVICE_CRASHED = 'device_crashed';
