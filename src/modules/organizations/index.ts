/** The organizations module's public surface: what other modules and the composition root may import. */
export { OrganizationsModule } from './organizations.module.js';
export { OrganizationsService } from './application/organizations.service.js';
export { ORGANIZATION_ID as ORGANIZATION_ID_PARAM } from './http/organizations.controller.js';
export { ORGANIZATION_ROLES, type OrganizationRole } from './domain/organization.js';
export { MEMBERS_TOPIC, parseMembershipChanges } from './domain/organization.store.js';
export * from './sql-api.js';
import { OrganizationMemberRecord } from './infrastructure/organization-member.record.js';
import { OrganizationRecord } from './infrastructure/organization.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const ORGANIZATIONS_RECORDS = [OrganizationRecord, OrganizationMemberRecord];
