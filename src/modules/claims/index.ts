/** The claims module's public surface: what the composition root may import. */
export { ClaimsModule } from './claims.module.js';
import { ClaimAuditRecord } from './infrastructure/claim-audit.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const CLAIMS_RECORDS = [ClaimAuditRecord];
