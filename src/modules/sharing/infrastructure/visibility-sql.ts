/**
 * The one visibility rule, as SQL for every read path (dashboard, history, configuration, events,
 * alerts, the stream). A viewer sees a device when they are an administrator, its owner, or hold an
 * active share of it; a share is active while it is bound to an account (user_id) and was granted
 * by the device's current owner, so a release, a new claim or any other change of owner ends it
 * without touching the share. Arguments are SQL expressions: a table alias, and the viewer's
 * parameters (`$2::boolean`, `$3::uuid`).
 */

/**
 * Ids of the devices `user` holds an active share of. Uncorrelated, so the planner runs it once
 * (an InitPlan) and `device_id = ANY(ARRAY(…))` is an index condition on the primary key, beside
 * the owner index: a customer's list stays two index reads (device_shares_user_idx, devices_pkey).
 */
export const sharedDeviceIds = (user: string): string =>
  `SELECT s.device_id FROM device_shares s JOIN devices sd ON sd.device_id = s.device_id AND sd.owner_id = s.granted_by WHERE s.user_id = ${user}`;

/** The viewer sees device `d`. */
export const sees = (d: string, admin: string, user: string): string => `(${admin} OR ${d}.owner_id = ${user} OR ${d}.device_id = ANY(ARRAY(${sharedDeviceIds(user)})))`;

/**
 * The devices a customer (not an administrator) sees, as a row source in place of `devices`: their
 * own by the owner index, then those shared with them by the primary key. A filter `owner_id = $me
 * OR device_id = ANY(…)` on devices would leave the planner free to walk the whole primary key in
 * the list's order (what it picks under generic plans with ORDER BY device_id LIMIT); two arms each
 * read by an index cannot.
 */
export const customerDevices = (user: string): string =>
  `(SELECT * FROM devices WHERE owner_id = ${user}
    UNION ALL
    SELECT * FROM devices WHERE device_id = ANY(ARRAY(${sharedDeviceIds(user)})) AND owner_id IS DISTINCT FROM ${user})`;

/**
 * The part of a device's history the viewer sees, by the instant `ts` of a row: an administrator
 * all of it, the owner and their sharees from the device's visible_since (the release before the
 * owner's claim) on.
 */
export const withinWindow = (d: string, admin: string, ts: string): string => `(${admin} OR ${d}.visible_since IS NULL OR ${ts} >= ${d}.visible_since)`;

/** The viewer's role on device `d`: owner, admin, installer, viewer, or null (none). */
export const roleOn = (d: string, admin: string, user: string): string =>
  `CASE WHEN ${d}.owner_id = ${user} THEN 'owner' WHEN ${admin} THEN 'admin'
        ELSE (SELECT s.role FROM device_shares s WHERE s.device_id = ${d}.device_id AND s.user_id = ${user} AND s.granted_by = ${d}.owner_id) END`;

/**
 * For rows that carry the owner the device had when they happened (device_events.owner_id, as the
 * stream reads them): the viewer sees them when they were the owner then, or hold an active share
 * granted by that same owner.
 */
export const seesOwnedBy = (deviceColumn: string, ownerColumn: string, admin: string, user: string): string =>
  `(${admin} OR ${ownerColumn} = ${user} OR (${deviceColumn}, ${ownerColumn}) IN (SELECT s.device_id, s.granted_by FROM device_shares s JOIN devices sd ON sd.device_id = s.device_id AND sd.owner_id = s.granted_by WHERE s.user_id = ${user}))`;
