import { Module } from '@nestjs/common';
import { AccountErasure, AccountsModule } from '../accounts/index.js';
import { AuditModule } from '../audit/index.js';
import { DevicesModule } from '../devices/index.js';
import { EventsModule } from '../events/index.js';
import { AdminOwnershipService } from './application/admin-ownership.service.js';
import { SharingModule } from '../sharing/index.js';
import { OrganizationsModule } from '../organizations/index.js';
import { ClaimsService } from './application/claims.service.js';
import { ClaimAuditStore } from './domain/claim-audit.store.js';
import { AdminOwnershipController } from './http/admin-ownership.controller.js';
import { ClaimsController } from './http/claims.controller.js';
import { SqlClaimAuditStore } from './infrastructure/sql-claim-audit.store.js';

@Module({
  imports: [DevicesModule, EventsModule, AuditModule, AccountsModule, SharingModule, OrganizationsModule],
  controllers: [ClaimsController, AdminOwnershipController],
  providers: [ClaimsService, AdminOwnershipService, { provide: ClaimAuditStore, useClass: SqlClaimAuditStore }],
})
export class ClaimsModule {
  constructor(erasure: AccountErasure, claims: ClaimsService) {
    // A deleted account's devices are released, in the deletion's transaction.
    erasure.register('claims: release the devices', (tx, account) => claims.releaseAllOf(account, tx));
  }
}
