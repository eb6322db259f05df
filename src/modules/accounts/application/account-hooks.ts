import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** An account just created, as the steps that follow its creation see it. */
export interface CreatedAccount {
  userId: string;
  /** Normalized (trimmed, lower-cased). */
  email: string;
  at: Date;
}

/** What a module does when an account is created, inside the creating transaction (organizations: its personal one). */
export type AccountCreatedStep = (tx: SqlRunner, account: CreatedAccount) => Promise<void>;

/** What a module does once an account's address is verified, and again at each login (invitations waiting for the address start to count). */
export type AddressVerifiedStep = (userId: string, email: string) => Promise<void>;

/**
 * The moments of an account other modules act on, which they register while they start, so
 * accounts depends on none of them (as AccountErasure for the deletion).
 */
@Injectable()
export class AccountHooks {
  private readonly createdSteps: { name: string; step: AccountCreatedStep }[] = [];
  private readonly verifiedSteps: { name: string; step: AddressVerifiedStep }[] = [];

  onCreated(name: string, step: AccountCreatedStep): void {
    if (this.createdSteps.some((registered) => registered.name === name)) throw new Error(`account creation step ${name} registered twice`);
    this.createdSteps.push({ name, step });
  }

  onVerified(name: string, step: AddressVerifiedStep): void {
    if (this.verifiedSteps.some((registered) => registered.name === name)) throw new Error(`address verification step ${name} registered twice`);
    this.verifiedSteps.push({ name, step });
  }

  /** Runs every creation step in `tx`, in the order they were registered: a step that throws undoes the creation. */
  async created(tx: SqlRunner, account: CreatedAccount): Promise<void> {
    for (const { step } of this.createdSteps) await step(tx, account);
  }

  async verified(userId: string, email: string): Promise<void> {
    for (const { step } of this.verifiedSteps) await step(userId, email);
  }
}
