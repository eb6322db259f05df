export interface StoredRefreshToken {
  id: string;
  subjectId: string;
  /** The subject's token version when issued: a later version voids the token. */
  tokenVersion: number;
  /** The session: the token a login issued and every successor of it share this id. */
  familyId: string;
  expiresAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewRefreshToken {
  subjectId: string;
  tokenVersion: number;
  familyId: string;
  tokenHash: string;
  issuedAt: Date;
  expiresAt: Date;
}

export interface Successor {
  tokenHash: string;
  expiresAt: Date;
}

/** Port: refresh tokens of one kind of subject (devices, users), found by their HMAC. */
export abstract class RefreshTokenStore {
  abstract insert(token: NewRefreshToken): Promise<void>;
  abstract findByHash(tokenHash: string): Promise<StoredRefreshToken | null>;
  /**
   * At once, if the token is still live: marks it rotated at `now` and stores its successor (same
   * subject, token version and family, issued `now`). False when it was not live any more: another
   * request rotated or revoked it first.
   */
  abstract rotate(id: string, successor: Successor, now: Date): Promise<boolean>;
  /** Logout: revokes every token of the session the token belongs to. */
  abstract revokeFamilyOf(tokenHash: string, now: Date): Promise<void>;
  abstract revokeAllOf(subjectId: string, now: Date): Promise<void>;
}
