/** The accounts module's public surface: what other modules and the composition root may import. */
export { AccountsModule } from './accounts.module.js';
export { AccountsService } from './application/accounts.service.js';
export { adminPasswordProblem } from './domain/password-policy.js';
export { AccountErasure, type AccountErasureStep, type ErasedAccount } from './application/account-erasure.js';
export * from './sql-api.js';
import { EmailVerificationTokenRecord, PasswordResetTokenRecord, UserRecord, UserRefreshTokenRecord } from './infrastructure/user.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const ACCOUNTS_RECORDS = [UserRecord, EmailVerificationTokenRecord, PasswordResetTokenRecord, UserRefreshTokenRecord];
