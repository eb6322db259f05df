import { mayAdminister, mayAssign, ORGANIZATION_ROLES, type OrganizationRole } from './organization.js';

describe('organization roles', () => {
  it('lets owners and admins administer, not operators or viewers', () => {
    expect(ORGANIZATION_ROLES.filter(mayAdminister)).toEqual(['owner', 'admin']);
  });

  it('lets an owner give any role to anyone', () => {
    for (const from of [null, ...ORGANIZATION_ROLES]) for (const to of ORGANIZATION_ROLES) expect(mayAssign('owner', from, to)).toBe(true);
  });

  it('lets an admin give and change every role but owner, and never touch an owner', () => {
    const allowed = (from: OrganizationRole | null) => ORGANIZATION_ROLES.filter((to) => mayAssign('admin', from, to));
    expect(allowed(null)).toEqual(['admin', 'operator', 'viewer']);
    expect(allowed('viewer')).toEqual(['admin', 'operator', 'viewer']);
    expect(allowed('owner')).toEqual([]);
  });

  it('lets operators and viewers give nothing', () => {
    for (const actor of ['operator', 'viewer'] as const) for (const from of [null, ...ORGANIZATION_ROLES]) for (const to of ORGANIZATION_ROLES) expect(mayAssign(actor, from, to)).toBe(false);
  });
});
