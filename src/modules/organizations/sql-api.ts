/**
 * The organizations module's SQL surface: what its migrations define for the statements of other
 * modules. This file imports nothing, so any module may import it whatever the direction of its
 * other imports.
 */

/** `member_organizations(user uuid)` → (organization_id, role): the organizations the account is a bound member of, with its role. */
export const MEMBER_ORGANIZATIONS = 'member_organizations';

/** `organization_accounts(organization uuid)` → (user_id): the accounts bound to the organization as members. */
export const ORGANIZATION_ACCOUNTS = 'organization_accounts';
