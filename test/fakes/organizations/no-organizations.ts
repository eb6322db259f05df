import type { SqlRunner } from '../../../src/shared/database/sql.js';
import { OrganizationStore } from '../../../src/modules/organizations/domain/organization.store.js';
import type { MyOrganization, OrganizationMember } from '../../../src/modules/organizations/domain/organization.js';

/**
 * Organizations for unit specs of other modules whose accounts belong to no organization but their
 * personal one: every lookup finds nothing, and a change is a bug in the spec.
 */
export class NoOrganizations extends OrganizationStore {
  async createPersonal(): Promise<void> {}
  async create(): Promise<void> {
    throw new Error('NoOrganizations: create is not for this spec');
  }
  async listMine(): Promise<MyOrganization[]> {
    return [];
  }
  async findMine(): Promise<MyOrganization | null> {
    return null;
  }
  async exists(): Promise<boolean> {
    return false;
  }
  async members(): Promise<OrganizationMember[]> {
    return [];
  }
  async withOrganization(): Promise<null> {
    return null;
  }
  async memberAccounts(): Promise<string[]> {
    return [];
  }
  async memberOrganizationsOf(): Promise<Set<string>> {
    return new Set();
  }
  async bind(): Promise<number> {
    return 0;
  }
  async deleteOfUser(_tx: SqlRunner): Promise<void> {}
  async soleOwnerWithDevices(_tx: SqlRunner): Promise<string[]> {
    return [];
  }
}
