import { Injectable } from '@nestjs/common';
import { CustomerAuthenticator, StreamTicketAuthenticator, type CustomerPrincipal } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { Sql } from '../../../shared/database/sql.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { FailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';

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
    private readonly sql: Sql,
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
    await this.sql.rows(
      `WITH expired AS (DELETE FROM stream_tickets WHERE expires_at < $5)
       INSERT INTO stream_tickets (ticket_hash, user_id, session_id, token_version, expires_at) VALUES ($1, $2, $3, $4, $6)`,
      [this.hasher.hmac(ticket), customer.userId, customer.session.sid, customer.session.tv, now, new Date(now.getTime() + TICKET_TTL_SEC * 1000)],
    );
    return { ticket, expiresIn: TICKET_TTL_SEC };
  }

  authenticate(ticket: string, clientAddress: string): Promise<CustomerPrincipal> {
    const bucket = { key: `stream-ticket:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC };
    return this.limiter.guard([bucket], async () => {
      const refused = new UnauthorizedError('The stream ticket is not valid: unknown, used or expired. Ask for a new one.');
      if (!TICKET_FORMAT.test(ticket)) throw refused;
      const [row] = await this.sql.rows<{ user_id: string; session_id: string; token_version: number; expires_at: Date }>(
        'DELETE FROM stream_tickets WHERE ticket_hash = $1 RETURNING user_id, session_id, token_version, expires_at',
        [this.hasher.hmac(ticket)],
      );
      if (!row || row.expires_at.getTime() <= this.clock.now().getTime()) throw refused;
      return this.accounts.authenticate({ sub: row.user_id, tv: row.token_version, sid: row.session_id });
    });
  }
}
