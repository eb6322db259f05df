import { aCustomer, type SignedIn } from './claim-fixtures.js';
import type { TestApp } from './create-test-app.js';

export type OrganizationRole = 'owner' | 'admin' | 'operator' | 'viewer';

/**
 * An organization made by a new verified customer (its owner), with one new verified member of
 * each other role, invited through the API: the fixture the organization tests start from.
 */
export async function anOrganization(t: TestApp, name = 'Solar Installers Ltd') {
  const owner = await aCustomer(t);
  const created = await t.api.POST('/api/v1/organizations', { body: { name }, headers: owner.headers });
  if (created.response.status !== 201) throw new Error(`creating an organization answered ${created.response.status}`);
  const organizationId = created.data!.organizationId;
  const members = { owner } as Record<OrganizationRole, SignedIn>;
  const memberIds = { owner: created.data!.memberId } as Record<OrganizationRole, string>;
  for (const role of ['admin', 'operator', 'viewer'] as const) {
    members[role] = await aCustomer(t);
    const invited = await t.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: members[role].email, role }, headers: owner.headers });
    if (invited.response.status !== 201) throw new Error(`inviting a ${role} answered ${invited.response.status}`);
    memberIds[role] = invited.data!.memberId;
  }
  return { organizationId, members, memberIds };
}
