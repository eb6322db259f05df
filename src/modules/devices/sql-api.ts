/**
 * The devices module's SQL surface: views and functions its migrations define for the statements of
 * other modules that must stay one statement (visibility joins, dashboard lists, audit and event
 * pages). Everything else reaches devices through DeviceDirectory and DeviceReports. This file
 * imports nothing, so any module may import it whatever the direction of its other imports.
 */

/** View (device_id, owner_id, visible_since): each device's owner, and where the current owner's view of its history starts. */
export const DEVICE_OWNERS = 'device_owners';

/**
 * View of what the dashboard shows of a device: device_id, hardware_id, firmware_version, owner_id,
 * claimed_at, last_seen_at, last_telemetry_at, visible_since, config_overrides, config_revision,
 * applied_config_version, config_applied_at, name, tags.
 */
export const DEVICE_SUMMARIES = 'device_summaries';

/** `device_online(last_telemetry_at, interval_sec, now)`: isDeviceOnline (domain/device-online.ts) in SQL. */
export const DEVICE_ONLINE = 'device_online';
