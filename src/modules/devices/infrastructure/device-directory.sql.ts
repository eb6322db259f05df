/**
 * What other modules' SQL may read of a device: a view the migrations define over `devices`
 * (device_id, hardware_id, firmware_version, owner_id), expanded by PostgreSQL into the statement
 * that reads it. Only this module names the table.
 */
export const DEVICE_DIRECTORY = 'device_directory';
