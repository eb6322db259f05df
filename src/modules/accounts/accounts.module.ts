import { Module, type OnApplicationBootstrap } from '@nestjs/common';
import { CustomerAuthenticator } from '../../auth/principals.js';
import { JwtModule } from '@nestjs/jwt';
import { hmacKey } from '../../auth/access-token.js';
import { Env } from '../../config/env.js';
import { Secrets } from '../../config/secrets.js';
import { RefreshTokenStore } from '../../shared/auth-tokens/refresh-token-store.js';
import { SqlRefreshTokenStore } from '../../shared/auth-tokens/sql-refresh-token.store.js';
import { DatabaseConnection } from '../../shared/database/database-connection.js';
import { Sql } from '../../shared/database/sql.js';
import { SharingModule, SharingService } from '../sharing/index.js';
import { OrganizationsModule, OrganizationsService } from '../organizations/index.js';
import { AccountHooks } from './application/account-hooks.js';
import { AccountsService } from './application/accounts.service.js';
import { AccountPasswordService } from './application/account-password.service.js';
import { AccountSessionsService } from './application/account-sessions.service.js';
import { AccountSignupService } from './application/account-signup.service.js';
import { PasswordCheck } from './application/password-check.js';
import { AccountErasure } from './application/account-erasure.js';
import { AccountMailOutbox, SendPasswordResetMail, SendSignupNotice, SendVerificationMail } from './application/account-mails.js';
import { UserTokens } from './application/user-tokens.js';
import { CustomerSessions } from './application/customer-sessions.js';
import { UserRepository } from './domain/user.repository.js';
import { AuthController } from './http/auth.controller.js';
import { ResetPasswordPageController } from './http/reset-password-page.controller.js';
import { VerifyEmailPageController } from './http/verify-email-page.controller.js';
import { QueuedAccountMails } from './infrastructure/queued-account-mails.js';
import { SqlSessionUsers } from './infrastructure/sql-session-users.js';
import { SqlUserRepository } from './infrastructure/sql-user.repository.js';
import { USER_REFRESH_TOKENS } from './infrastructure/user.record.js';

@Module({
  imports: [
    SharingModule,
    OrganizationsModule,
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({ secret: hmacKey(secrets.customerJwtSecret), signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } }),
    }),
  ],
  controllers: [AuthController, VerifyEmailPageController, ResetPasswordPageController],
  providers: [
    AccountsService,
    AccountSignupService,
    AccountSessionsService,
    AccountPasswordService,
    PasswordCheck,
    UserTokens,
    CustomerSessions,
    {
      provide: RefreshTokenStore,
      inject: [Sql, CustomerSessions],
      useFactory: (sql: Sql, sessions: CustomerSessions) => new SqlRefreshTokenStore(sql, USER_REFRESH_TOKENS, (userId) => sessions.changed(userId)),
    },
    SqlSessionUsers,
    { provide: UserRepository, useClass: SqlUserRepository },
    SendVerificationMail,
    SendSignupNotice,
    SendPasswordResetMail,
    AccountErasure,
    AccountHooks,
    { provide: AccountMailOutbox, useClass: QueuedAccountMails },
    // The port the customer guard looks customers up through (src/auth/principals.ts).
    { provide: CustomerAuthenticator, useExisting: AccountSessionsService },
  ],
  exports: [AccountsService, AccountErasure, CustomerAuthenticator],
})
export class AccountsModule implements OnApplicationBootstrap {
  constructor(
    private readonly accounts: AccountsService,
    private readonly env: Env,
    private readonly database: DatabaseConnection,
    erasure: AccountErasure,
    sharing: SharingService,
    hooks: AccountHooks,
    organizations: OrganizationsService,
  ) {
    // Shares the account granted or holds, and those waiting for its address, go with it. (Accounts
    // already depend on sharing, which binds waiting shares at verification; sharing cannot import accounts.)
    erasure.register('sharing: drop the shares', (tx, account) => sharing.removeAllOf(tx, account.userId).then(() => undefined));
    // Every account has its personal organization; invitations wait for a verified address; the
    // account's memberships, personal organization and those it alone owns go with it.
    hooks.onCreated('organizations: the personal organization', (tx, account) => organizations.createPersonal(tx, account));
    hooks.onVerified('organizations: bind the invitations', (userId, email) => organizations.bindVerified(userId, email));
    erasure.register('organizations: drop the memberships', (tx, account) => organizations.removeAllOf(tx, account.userId));
  }

  async onApplicationBootstrap(): Promise<void> {
    const { ADMIN_EMAIL: email, ADMIN_PASSWORD: password } = this.env;
    if (email && password) await this.database.atStartup('administrator', () => this.accounts.ensureAdmin(email, password));
  }
}
