/** A stored ticket: the session it was issued for, and until when it may be redeemed. */
export interface StoredTicket {
  userId: string;
  sessionId: string;
  tokenVersion: number;
  expiresAt: Date;
}

/** Stream tickets by the HMAC of their value (StreamTickets). */
export abstract class StreamTicketStore {
  /** Stores a new ticket, dropping those expired before `now`. */
  abstract add(ticketHash: string, ticket: StoredTicket, now: Date): Promise<void>;

  /** Deletes the ticket and answers it, once: null when it is unknown or was redeemed already. */
  abstract take(ticketHash: string): Promise<StoredTicket | null>;
}
