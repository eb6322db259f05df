import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** The account being deleted, as the steps of its erasure see it. */
export interface ErasedAccount {
  userId: string;
  /** Who asked (the account itself, from this address), for the audit rows a step writes. */
  clientAddress: string;
  at: Date;
}

/**
 * What a module does about an account that is being deleted, inside the deletion's transaction and
 * before the account's row goes (claims: release its devices). Whatever a step writes commits with
 * the deletion or not at all; a step that throws leaves the account as it was.
 */
export type AccountErasureStep = (tx: SqlRunner, account: ErasedAccount) => Promise<void>;

/**
 * The account deletion's transaction, which modules extend: each module that holds something of an
 * account (devices, and later shares and API keys) registers its step while it starts, so accounts
 * depends on none of them. Rows that only reference the account (`ON DELETE CASCADE`: sessions,
 * verification and reset tokens, webhooks, pending notifications, stream tickets) go with its row
 * and need no step.
 */
@Injectable()
export class AccountErasure {
  private readonly steps: { name: string; step: AccountErasureStep }[] = [];

  register(name: string, step: AccountErasureStep): void {
    if (this.steps.some((registered) => registered.name === name)) throw new Error(`account erasure step ${name} registered twice`);
    this.steps.push({ name, step });
  }

  /** The names of the registered steps, in the order they run. */
  get stepNames(): string[] {
    return this.steps.map(({ name }) => name);
  }

  /** Runs every step in `tx`, in the order they were registered. */
  async runIn(tx: SqlRunner, account: ErasedAccount): Promise<void> {
    for (const { step } of this.steps) await step(tx, account);
  }
}
