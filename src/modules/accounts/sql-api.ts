/**
 * The accounts module's SQL surface: what its migrations define for the statements of other
 * modules (a join, a lock in their transaction). This file imports nothing, so any module may
 * import it whatever the direction of its other imports.
 */

/** View (user_id, email, email_verified, role) of every account; `FOR UPDATE` on it locks the account's row. */
export const ACCOUNT_SUMMARIES = 'account_summaries';
