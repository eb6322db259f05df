import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/index.js';
import { OrganizationsService } from './application/organizations.service.js';
import { OrganizationStore } from './domain/organization.store.js';
import { OrganizationsController } from './http/organizations.controller.js';
import { SqlOrganizationStore } from './infrastructure/sql-organization.store.js';

/** Organizations: fleets owned by companies and households, and their members with roles. */
@Module({
  imports: [AuditModule],
  controllers: [OrganizationsController],
  providers: [OrganizationsService, { provide: OrganizationStore, useClass: SqlOrganizationStore }],
  exports: [OrganizationsService],
})
export class OrganizationsModule {}
