/** An event as an e-mail digest tells it. */
export interface NotifiedEvent {
  id: string;
  type: string;
  deviceId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** Port for the events waiting for an owner's next digest. The abstract class doubles as the injection token. */
export abstract class PendingNotificationStore {
  /** Adds the event to the user's next digest (once, however often it is added). */
  abstract add(userId: string, eventId: string): Promise<void>;
  /**
   * Runs `send` with the user's waiting events, oldest first, and forgets them only if it
   * succeeds (one transaction): a digest that failed is sent again, with what came meanwhile.
   */
  abstract drain(userId: string, send: (events: NotifiedEvent[]) => Promise<void>): Promise<number>;
}
