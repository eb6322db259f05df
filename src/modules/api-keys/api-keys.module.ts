import { Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from '../../auth/principals.js';
import { AuditModule } from '../audit/index.js';
import { OrganizationsModule } from '../organizations/index.js';
import { ApiKeysService } from './application/api-keys.service.js';
import { ApiKeyStore } from './domain/api-key.store.js';
import { ApiKeysController } from './http/api-keys.controller.js';
import { OrganizationApiKeysController } from './http/organization-api-keys.controller.js';
import { SqlApiKeyStore } from './infrastructure/sql-api-key.store.js';

/** API keys for integrations: an account's or an organization's, created and revoked by a signed-in customer, accepted by the customer guard where a route takes them. */
@Module({
  imports: [AuditModule, OrganizationsModule],
  controllers: [ApiKeysController, OrganizationApiKeysController],
  providers: [
    ApiKeysService,
    { provide: ApiKeyStore, useClass: SqlApiKeyStore },
    // The port the customer guard checks keys through (src/auth/principals.ts).
    { provide: ApiKeyAuthenticator, useExisting: ApiKeysService },
  ],
  exports: [ApiKeysService, ApiKeyAuthenticator],
})
export class ApiKeysModule {}
