import { Injectable } from '@nestjs/common';
import { CustomerAuthenticator, StreamTicketAuthenticator, type CustomerPrincipal } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { FailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';
import { StreamTicketStore } from '../domain/stream-ticket.store.js';

export const TICKET_TTL_SEC = 60;
const TICKET_FORMAT = /^st_[A-Za-z0-9_-]{43}$/;

/**
 * Single-use tickets that open one stream (`?ticket=`), for browsers' EventSource, which cannot
 * send an Authorization header: so no long-lived token ever sits in a URL or an access log.
 *
 * A ticket is a random 256-bit value; only its HMAC is stored, with the session of the token that
 * asked for it. Redeeming deletes it (so it works once, on any instance) and checks that session
 * again as a bearer token would be checked: a ticket dies with its session. Failures count against
 * the client address like failed logins.
 */
@Injectable()
export class StreamTickets extends StreamTicketAuthenticator {
  constructor(
    private readonly tickets: StreamTicketStore,
    private readonly hasher: SecretHasher,
    private readonly accounts: CustomerAuthenticator,
    private readonly limiter: FailureLimiter,
    private readonly env: Env,
    private readonly clock: Clock,
  ) {
    super();
  }

  async issue(customer: CustomerPrincipal): Promise<{ ticket: string; expiresIn: number }> {
    if (!customer.session) throw new UnauthorizedError();
    const ticket = `st_${SecretHasher.randomToken()}`;
    const now = this.clock.now();
    await this.tickets.add(
      this.hasher.hmac(ticket),
      { userId: customer.userId, sessionId: customer.session.sid, tokenVersion: customer.session.tv, expiresAt: new Date(now.getTime() + TICKET_TTL_SEC * 1000) },
      now,
    );
    return { ticket, expiresIn: TICKET_TTL_SEC };
  }

  authenticate(ticket: string, clientAddress: string): Promise<CustomerPrincipal> {
    const bucket = { key: `stream-ticket:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC };
    return this.limiter.guard([bucket], async () => {
      const refused = new UnauthorizedError('The stream ticket is not valid: unknown, used or expired. Ask for a new one.');
      if (!TICKET_FORMAT.test(ticket)) throw refused;
      const stored = await this.tickets.take(this.hasher.hmac(ticket));
      if (!stored || stored.expiresAt.getTime() <= this.clock.now().getTime()) throw refused;
      return this.accounts.authenticate({ sub: stored.userId, tv: stored.tokenVersion, sid: stored.sessionId });
    });
  }
}
