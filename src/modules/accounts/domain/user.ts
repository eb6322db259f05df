export type Role = 'customer' | 'admin';

export interface UserState {
  id: string;
  email: string;
  passwordHash: string;
  role: Role;
  emailVerifiedAt: Date | null;
  tokenVersion: number;
  createdAt: Date;
  /** Whether the owner gets e-mail about alerts, offline devices and failed updates. */
  alertEmails: boolean;
}

/** A customer or administrator account. */
export class User {
  private constructor(private state: UserState) {}

  static create(input: { id: string; email: string; passwordHash: string; role: Role; verified: boolean; now: Date }): User {
    return new User({
      id: input.id,
      email: input.email,
      passwordHash: input.passwordHash,
      role: input.role,
      emailVerifiedAt: input.verified ? input.now : null,
      tokenVersion: 1,
      createdAt: input.now,
      alertEmails: true,
    });
  }

  static restore(state: UserState): User {
    return new User({ ...state });
  }

  /** E-mail addresses compare trimmed and lower-cased, so one person cannot hold two accounts by case. */
  static normalizeEmail(email: string): string {
    return email.trim().toLowerCase();
  }

  get id(): string {
    return this.state.id;
  }
  get email(): string {
    return this.state.email;
  }
  get passwordHash(): string {
    return this.state.passwordHash;
  }
  get role(): Role {
    return this.state.role;
  }
  get isAdmin(): boolean {
    return this.state.role === 'admin';
  }
  get emailVerified(): boolean {
    return this.state.emailVerifiedAt !== null;
  }
  get tokenVersion(): number {
    return this.state.tokenVersion;
  }
  get alertEmails(): boolean {
    return this.state.alertEmails;
  }

  setAlertEmails(on: boolean): void {
    this.state.alertEmails = on;
  }

  verifyEmail(now: Date): void {
    if (!this.state.emailVerifiedAt) this.state = { ...this.state, emailVerifiedAt: now };
  }

  /**
   * ADMIN_EMAIL names this account: it becomes a verified administrator with the configured
   * password, and every token issued before is void — whoever signed up with that address
   * first must not keep a session that is now an administrator's.
   */
  promoteToAdmin(passwordHash: string, now: Date): void {
    this.state = {
      ...this.state,
      role: 'admin',
      passwordHash,
      emailVerifiedAt: this.state.emailVerifiedAt ?? now,
      tokenVersion: this.state.tokenVersion + 1,
    };
  }

  /** Voids every token issued so far (refresh-token reuse). */
  revokeTokens(): void {
    this.state = { ...this.state, tokenVersion: this.state.tokenVersion + 1 };
  }

  toState(): UserState {
    return { ...this.state };
  }
}
