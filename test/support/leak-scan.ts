import type { Middleware } from 'openapi-fetch';
import type pg from 'pg';

/**
 * The e2e suite's leak check: nothing in any response or log line carries a secret, a stored hash
 * or another user's e-mail. createTestApp feeds every answer of the typed client and every log line
 * of its apps to the file's scanner, and scans when the app closes (once per test file, since Jest
 * loads this module afresh for each file).
 *
 * Matching is by token, so a file costs one pass over what it captured: a secret is known by its
 * longest run of base64url characters (the signature, for a JWT), and a captured text is cut into
 * such runs and each run looked up. A secret glued to other letters or digits in the text, or one
 * shorter than MIN_FINGERPRINT, is not seen.
 */

const MIN_FINGERPRINT = 12;
const RUN = /[A-Za-z0-9_-]{12,}/g;
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;
const ARGON2 = /\$argon2(?:id|i|d)\$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Operations whose 2xx answer hands out credentials, and the members that carry them. */
const ISSUING_OPERATIONS = new Set([
  'POST /api/v1/device/register',
  'POST /api/v1/device/login',
  'POST /api/v1/device/token/refresh',
  'POST /api/v1/auth/login',
  'POST /api/v1/auth/refresh',
  'POST /api/v1/user/api-keys',
]);
const ISSUED_MEMBERS = ['accessToken', 'refreshToken', 'deviceSecret', 'key'] as const;
/** Request members that are secrets of the caller. */
const SECRET_REQUEST_MEMBERS = ['password', 'currentPassword', 'newPassword', 'deviceSecret', 'claimCode', 'refreshToken', 'token'] as const;
/** A member of this name in an answer that issues nothing is a leak whatever its value. */
const SECRET_MEMBER = /"(?:accessToken|refreshToken|deviceSecret|password|passwordHash|password_hash|claimCode|secretHash|secret_hash|tokenHash|token_hash|keyHash|key_hash)"\s*:/;

interface Caller {
  userId?: string;
  email?: string;
  admin: boolean;
  /** The organization of the route asked (`/api/v1/organizations/{organizationId}…`), if any. */
  organizationId?: string;
}

interface Captured {
  kind: 'response' | 'log';
  where: string;
  text: string;
  caller?: Caller;
  /** Fingerprints of the secrets this answer issued: they may appear here and nowhere else. */
  issued: Set<string>;
}

export interface Leak {
  what: string;
  where: string;
  excerpt: string;
}

/** The run that identifies a secret in text: a JWT's signature, else its longest base64url run. */
export function fingerprintOf(value: string): string | undefined {
  const runs = JWT.test(value) ? [value.slice(value.lastIndexOf('.') + 1)] : (value.match(/[A-Za-z0-9_-]+/g) ?? []);
  const longest = runs.reduce((best, run) => (run.length > best.length ? run : best), '');
  return longest.length >= MIN_FINGERPRINT ? longest : undefined;
}

function claimsOf(authorization: string | null): Record<string, unknown> | undefined {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token || !JWT.test(token)) return undefined;
  try {
    return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function parseJson(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function excerptAround(text: string, index: number, length: number): string {
  const start = Math.max(0, index - 60);
  return `${start > 0 ? '…' : ''}${text.slice(start, index + length + 60)}${index + length + 60 < text.length ? '…' : ''}`.replaceAll('\n', '⏎');
}

export class LeakScanner {
  private readonly captured: Captured[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly userIdByEmail = new Map<string, string>();
  /** Addresses each account shared a device with (POST …/shares): the owner may see them again. */
  private readonly sharedWith = new Map<string, Set<string>>();
  /**
   * The people of each organization: the account that created it and the addresses invited to it.
   * Its members may see one another's addresses in its routes (the members list); nobody else.
   */
  private readonly organizationPeople = new Map<string, { creators: Set<string>; invited: Set<string> }>();

  private peopleOf(organizationId: string): { creators: Set<string>; invited: Set<string> } {
    let people = this.organizationPeople.get(organizationId);
    if (!people) this.organizationPeople.set(organizationId, (people = { creators: new Set(), invited: new Set() }));
    return people;
  }
  private readonly requestBodies = new Map<string, Promise<string>>();
  private readonly flagged: Leak[] = [];
  private scannedUpTo = 0;

  /** Registers a secret: it may appear only in the answer that issued it. */
  secret(value: string, what: string): void {
    // Every argon2 string in a text is reported as one, whoever's it is.
    if (ARGON2.test(value)) return;
    const fingerprint = fingerprintOf(value);
    if (fingerprint && !this.secrets.has(fingerprint)) this.secrets.set(fingerprint, what);
  }

  /** Registers a user's address: only that user (or an administrator) may see it, and no log line. */
  email(email: string, userId: string): void {
    this.userIdByEmail.set(email.toLowerCase(), userId);
  }

  /** The log lines captured so far, as the application wrote them. */
  logLines(): string[] {
    return this.captured.filter((entry) => entry.kind === 'log').map((entry) => entry.text);
  }

  recordLog(line: string): void {
    this.captured.push({ kind: 'log', where: '', text: line, issued: new Set() });
  }

  recordResponse(where: string, text: string, caller: Caller, issued: Set<string> = new Set()): void {
    this.captured.push({ kind: 'response', where, text, caller, issued });
  }

  /** A pino destination: every log line of the app goes to the scanner. */
  readonly logDestination = { write: (line: string): void => this.recordLog(line) };

  /** openapi-fetch middleware: records each answer (headers and body) with who asked and what it issued. */
  readonly middleware: Middleware = {
    onRequest: ({ request, id }) => {
      this.requestBodies.set(id, request.clone().text());
      return undefined;
    },
    onResponse: async ({ request, response, schemaPath, id }) => {
      const requestText = (await this.requestBodies.get(id)) ?? '';
      this.requestBodies.delete(id);
      const operation = `${request.method} ${schemaPath}`;
      const requestBody = parseJson(requestText) ?? {};
      for (const member of SECRET_REQUEST_MEMBERS) {
        const value = requestBody[member];
        if (typeof value === 'string') this.secret(value, `the ${member} sent to ${operation}`);
      }
      const claims = claimsOf(request.headers.get('authorization'));
      const bodyEmail = typeof requestBody.email === 'string' ? requestBody.email.trim().toLowerCase() : undefined;
      const caller: Caller = {
        userId: claims?.aud === 'device-cloud:customer' && typeof claims.sub === 'string' ? claims.sub : undefined,
        email: bodyEmail,
        admin: claims?.aud === 'device-cloud:customer' && claims.role === 'admin',
        organizationId: schemaPath.startsWith('/api/v1/organizations/{organizationId}') ? /\/api\/v1\/organizations\/([^/?]+)/.exec(new URL(request.url).pathname)?.[1] : undefined,
      };
      // An address invited to an organization is its members' to see in its routes.
      if (operation === 'POST /api/v1/organizations/{organizationId}/members' && caller.organizationId && bodyEmail && response.ok) this.peopleOf(caller.organizationId).invited.add(bodyEmail);

      // An address an owner shared a device with is theirs to see again in the device's shares.
      if (operation === 'POST /api/v1/user/devices/{deviceId}/shares' && caller.userId && bodyEmail) {
        const known = this.sharedWith.get(caller.userId) ?? new Set<string>();
        this.sharedWith.set(caller.userId, known.add(bodyEmail));
      }

      const text = await response.clone().text();
      const body = parseJson(text);
      if (operation === 'POST /api/v1/organizations' && response.status === 201 && caller.userId && typeof body?.organizationId === 'string') this.peopleOf(body.organizationId).creators.add(caller.userId);
      if (operation === 'GET /api/v1/users/me' && response.status === 200 && typeof body?.userId === 'string' && typeof body.email === 'string') this.email(body.email, body.userId);
      const issued = new Set<string>();
      if (ISSUING_OPERATIONS.has(operation) && response.ok && body) {
        for (const member of ISSUED_MEMBERS) {
          const value = body[member];
          if (typeof value !== 'string') continue;
          this.secret(value, `the ${member} issued by ${operation}`);
          const fingerprint = fingerprintOf(value);
          if (fingerprint) issued.add(fingerprint);
        }
      }
      const headers = [...response.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
      const where = `${operation} → ${response.status}`;
      this.recordResponse(where, `${headers}\n\n${text}`, caller, issued);
      if (!ISSUING_OPERATIONS.has(operation) && SECRET_MEMBER.test(text)) {
        this.flagged.push({ what: 'a secret-named member in an answer that issues no credentials', where: `answer to ${where}`, excerpt: text.slice(0, 300) });
      }
      return undefined;
    },
  };

  /**
   * Reads from the database what must never leave it: password and claim-code hashes (argon2), the
   * HMACs of device secrets, refresh tokens, verification and reset tokens, and every user's address.
   */
  async harvest(db: pg.Pool): Promise<void> {
    const sources = [
      ['users', 'SELECT id, email, password_hash FROM users'],
      ['devices', 'SELECT secret_hash, claim_code_hash FROM devices'],
      ['device_refresh_tokens', 'SELECT token_hash FROM device_refresh_tokens'],
      ['user_refresh_tokens', 'SELECT token_hash FROM user_refresh_tokens'],
      ['email_verification_tokens', 'SELECT token_hash FROM email_verification_tokens'],
      ['api_keys', 'SELECT key_hash FROM api_keys'],
      ['password_reset_tokens', 'SELECT token_hash FROM password_reset_tokens'],
    ] as const;
    const { rows: present } = await db.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()');
    const tables = new Set(present.map((row) => row.name));
    for (const [table, sql] of sources) {
      if (!tables.has(table)) continue;
      const { rows } = await db.query<Record<string, string | null>>(sql);
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          if (!value) continue;
          if (column === 'email') this.email(value, row.id!);
          else if (column !== 'id') this.secret(value, `${table}.${column} from the database`);
        }
      }
    }
  }

  /** Every leak in what was captured since the last scan. */
  scan(): Leak[] {
    const leaks: Leak[] = this.flagged.splice(0);
    for (const entry of this.captured.slice(this.scannedUpTo)) {
      const { text } = entry;
      const where = entry.kind === 'log' ? 'log line' : `answer to ${entry.where}`;
      const argon = ARGON2.exec(text);
      if (argon) leaks.push({ what: 'an argon2 hash', where, excerpt: excerptAround(text, argon.index, 40) });
      for (const match of text.matchAll(RUN)) {
        const what = this.secrets.get(match[0]);
        if (what && !entry.issued.has(match[0])) leaks.push({ what, where, excerpt: excerptAround(text, match.index, match[0].length) });
      }
      for (const match of text.matchAll(EMAIL)) {
        const email = match[0].toLowerCase();
        const owner = this.userIdByEmail.get(email);
        if (!owner) continue;
        const caller = entry.caller;
        const people = caller?.organizationId === undefined ? undefined : this.organizationPeople.get(caller.organizationId);
        // A personal organization has its account's id: that account is its creator.
        const fellowMember = (people !== undefined && (people.invited.has(email) || people.creators.has(owner))) || (caller?.organizationId !== undefined && caller.organizationId === owner);
        const allowed =
          caller !== undefined && (caller.admin || caller.email === email || caller.userId === owner || fellowMember || (caller.userId !== undefined && this.sharedWith.get(caller.userId)?.has(email) === true));
        if (!allowed) leaks.push({ what: `the e-mail address of user ${owner}`, where, excerpt: excerptAround(text, match.index, match[0].length) });
      }
    }
    this.scannedUpTo = this.captured.length;
    return leaks;
  }

  /** How much was captured so far, for tests of the capture itself. */
  get size(): { responses: number; logLines: number } {
    const logLines = this.captured.filter((entry) => entry.kind === 'log').length;
    return { responses: this.captured.length - logLines, logLines };
  }

  /** Captured texts of one kind, for tests of the capture itself. */
  texts(kind: 'response' | 'log'): string[] {
    return this.captured.filter((entry) => entry.kind === kind).map((entry) => entry.text);
  }
}

export class SecretLeak extends Error {}

export function describeLeaks(leaks: Leak[]): string {
  return leaks.map((leak) => `- ${leak.what} in the ${leak.where}: ${leak.excerpt}`).join('\n');
}

/** Fails with every leak found since the last check. */
export function assertNoLeaks(scanner: LeakScanner): void {
  const leaks = scanner.scan();
  if (leaks.length > 0) throw new SecretLeak(`${leaks.length} leak(s) of secrets, hashes or other users' e-mails:\n${describeLeaks(leaks.slice(0, 20))}`);
}

/** The scanner of the current test file. */
export const fileScanner = new LeakScanner();
