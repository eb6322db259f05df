/**
 * The sharing module's SQL surface: the one visibility rule as functions its migrations define,
 * for the statements of other modules that read what a viewer sees. This file imports nothing, so
 * any module may import it whatever the direction of its other imports.
 */

/**
 * `visible_devices(is_admin boolean, user uuid)` → (device_id, role, owner_id, visible_since, sees_from):
 * the devices the viewer sees and their role (owner, admin, installer, viewer). A row of the
 * device's history (an event, an alert, a reading) is theirs to see from `sees_from` on: all of it
 * for an administrator, from visible_since (the release before the owner's claim) for the owner and
 * their sharees. Read by device id or joined on it, it reads devices by the primary key.
 */
export const VISIBLE_DEVICES = 'visible_devices';

/**
 * `customer_devices(user uuid)`: the rows of visible_devices(false, user) as a row source for a
 * customer's list: their devices by the owner index, then those shared with them by the primary key.
 */
export const CUSTOMER_DEVICES = 'customer_devices';

/**
 * `organization_devices(user uuid, organization uuid)`: the rows of visible_devices(false, user)
 * owned by that organization when the user is its member (all of its devices, by their role),
 * none otherwise, as a row source in device id order from the owner index: the list's
 * organization filter.
 */
export const ORGANIZATION_DEVICES = 'organization_devices';

/** `shared_with(user uuid)` → (device_id, owner_id, role, visible_since): the active shares the account holds, with the owner who granted each. */
export const SHARED_WITH = 'shared_with';
