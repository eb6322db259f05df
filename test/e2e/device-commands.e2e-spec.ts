import type { components } from '@device-cloud/client';
import { ChangeFeed } from '../../src/shared/database/change-feed.js';
import { bearer } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, sharedSecrets, startTestApp, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';
import { eventually } from '../support/eventually.js';
import { jobsSettled } from '../support/jobs.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { buildService, freePort, httpCall, killService, scratchDir, startService, waitUntilReady, type Running } from '../support/service-process.js';

type Command = components['schemas']['CommandResponse'];
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  headers: Headers;
}

async function aGateway(t: TestApp, owner: SignedIn): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner);
  return { deviceId: body.deviceId, headers: bearer(registered.accessToken) };
}

function send(t: TestApp, who: Headers, deviceId: string, body: components['schemas']['SendCommandRequest']) {
  return t.api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, body, headers: who });
}

async function sent(t: TestApp, who: Headers, deviceId: string, body: components['schemas']['SendCommandRequest']): Promise<Command> {
  const { data, response } = await send(t, who, deviceId, body);
  if (response.status !== 201 || !data) throw new Error(`send answered ${response.status}`);
  return data;
}

function poll(t: TestApp, gateway: Gateway, options: { etag?: string; waitSec?: number } = {}) {
  return t.api.GET('/api/v1/device/commands', {
    params: { query: options.waitSec === undefined ? {} : { waitSec: options.waitSec } },
    headers: { ...gateway.headers, ...(options.etag === undefined ? {} : { 'if-none-match': options.etag }) },
  });
}

function report(t: TestApp, gateway: Gateway, commandId: string, body: components['schemas']['CommandResultRequest']) {
  return t.api.POST('/api/v1/device/commands/{commandId}/result', { params: { path: { commandId } }, body, headers: gateway.headers });
}

function getCommand(t: TestApp, who: Headers, deviceId: string, commandId: string) {
  return t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands/{commandId}', { params: { path: { deviceId, commandId } }, headers: who });
}

function cancel(t: TestApp, who: Headers, deviceId: string, commandId: string) {
  return t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/commands/{commandId}', { params: { path: { deviceId, commandId } }, headers: who });
}

async function storedCommands(t: TestApp, deviceId: string): Promise<Array<{ type: string; state: string; deliveries: number }>> {
  return (await t.db.query('SELECT type, state, deliveries FROM device_commands WHERE device_id = $1 ORDER BY command_id', [deviceId])).rows;
}

async function eventTypes(t: TestApp, deviceId: string): Promise<string[]> {
  const { rows } = await t.db.query<{ type: string }>("SELECT type FROM device_events WHERE device_id = $1 AND type LIKE 'command.%' ORDER BY id", [deviceId]);
  return rows.map((row) => row.type);
}

describe('commands to gateways', () => {
  let t: TestApp;
  let owner: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    owner = await aCustomer(t);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('goes queued → delivered → succeeded, at least once, with an event for each state and the send audited', async () => {
    const gateway = await aGateway(t, owner);
    const command = await sent(t, owner.headers, gateway.deviceId, { type: 'set-log-level', params: { level: 'debug' } });
    expect(command).toEqual(expect.objectContaining({ commandId: expect.stringMatching(/^cmd_\d+$/), deviceId: gateway.deviceId, type: 'set-log-level', params: { level: 'debug' }, state: 'queued', deliveries: 0, deliveredAt: null }));
    expect(new Date(command.expiresAt).getTime() - new Date(command.createdAt).getTime()).toBe(3600_000);
    // Its expiry is a job due in an hour: not work in flight that suites waiting for the queue to settle should wait for.
    await jobsSettled(t.db, 2000);

    const first = await poll(t, gateway);
    expect(first.response.status).toBe(200);
    expect(first.data!.commands).toEqual([{ commandId: command.commandId, type: 'set-log-level', params: { level: 'debug' }, createdAt: command.createdAt, expiresAt: command.expiresAt }]);
    const etag = first.response.headers.get('etag')!;
    expect(etag).toMatch(/^"/);

    // The gateway holds the answer: unchanged polls are 304s; one that lost the answer gets it again.
    expect((await poll(t, gateway, { etag })).response.status).toBe(304);
    const again = await poll(t, gateway);
    expect(again.data!.commands.map((pending) => pending.commandId)).toEqual([command.commandId]);
    expect(await storedCommands(t, gateway.deviceId)).toEqual([{ type: 'set-log-level', state: 'delivered', deliveries: 2 }]);

    const accepted = await report(t, gateway, command.commandId, { status: 'accepted' });
    expect(accepted.response.status).toBe(200);
    expect(accepted.data).toEqual({ commandId: command.commandId, state: 'delivered' });
    const done = await report(t, gateway, command.commandId, { status: 'succeeded', output: 'log level debug' });
    expect(done.data).toEqual({ commandId: command.commandId, state: 'succeeded' });
    // A retried result is answered the same, and changes nothing; a different one is refused.
    expect((await report(t, gateway, command.commandId, { status: 'succeeded', output: 'log level debug' })).data).toEqual({ commandId: command.commandId, state: 'succeeded' });
    expectProblem(await report(t, gateway, command.commandId, { status: 'failed' }), 409, 'COMMAND_FINISHED');

    const read = await getCommand(t, owner.headers, gateway.deviceId, command.commandId);
    expect(read.data).toEqual(expect.objectContaining({ state: 'succeeded', output: 'log level debug', deliveries: 2, deliveredAt: expect.any(String), acceptedAt: expect.any(String), finishedAt: expect.any(String) }));
    expect(await eventTypes(t, gateway.deviceId)).toEqual(['command.queued', 'command.delivered', 'command.succeeded']);
    const events = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId: gateway.deviceId, type: 'command.succeeded' } }, headers: owner.headers });
    expect(events.data!.items).toEqual([expect.objectContaining({ type: 'command.succeeded', data: { commandId: command.commandId, commandType: 'set-log-level' } })]);
    const { rows: audit } = await t.db.query("SELECT actor_user_id, target FROM audit_log WHERE device_id = $1 AND action = 'device.command_sent'", [gateway.deviceId]);
    expect(audit).toEqual([{ actor_user_id: owner.userId, target: `command:${command.commandId}` }]);

    // Ended, it leaves the gateway's list: the ETag it holds is stale.
    const after = await poll(t, gateway, { etag });
    expect(after.response.status).toBe(200);
    expect(after.data!.commands).toEqual([]);
  });

  it('answers commands oldest first, lists them newest first in pages', async () => {
    const gateway = await aGateway(t, owner);
    const ids: string[] = [];
    for (const body of [{ type: 'ping' }, { type: 'upload-now' }, { type: 'collect-logs', params: { sinceSec: 600 } }, { type: 'custom', params: { name: 'relay.toggle', payload: { relay: 2 } } }] as const) {
      ids.push((await sent(t, owner.headers, gateway.deviceId, body)).commandId);
    }
    expect((await poll(t, gateway)).data!.commands.map((command) => command.commandId)).toEqual(ids);

    const page1 = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: gateway.deviceId }, query: { limit: 3 } }, headers: owner.headers });
    expect(page1.data!.items.map((command) => command.commandId)).toEqual(ids.slice(1).reverse());
    const page2 = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: gateway.deviceId }, query: { limit: 3, cursor: page1.data!.nextCursor! } }, headers: owner.headers });
    expect(page2.data).toEqual({ items: [expect.objectContaining({ commandId: ids[0], type: 'ping' })], nextCursor: null });
  });

  it('refuses unknown types, bad parameters and unknown fields with a 400 naming them, and queues nothing', async () => {
    const gateway = await aGateway(t, owner);
    const refusals: Array<[unknown, string[]]> = [
      [{ type: 'self-destruct' }, ['type']],
      [{ type: 'reboot', params: { delaySec: 5 } }, ['params.delaySec']],
      [{ type: 'set-log-level', params: { level: 'loud' } }, ['params.level']],
      [{ type: 'set-log-level' }, ['params.level']],
      [{ type: 'collect-logs', params: { sinceSec: 0 } }, ['params.sinceSec']],
      [{ type: 'collect-logs', params: { sinceSec: 1.5 } }, ['params.sinceSec']],
      [{ type: 'custom', params: { name: 'has space' } }, ['params.name']],
      [{ type: 'custom', params: { name: 'big', payload: 'x'.repeat(1100) } }, ['params.payload']],
      [{ type: 'ping', ttlSec: 0 }, ['ttlSec']],
      [{ type: 'ping', ttlSec: 7 * 24 * 3600 + 1 }, ['ttlSec']],
      [{ type: 'ping', params: [] }, ['params']],
      [{ type: 'ping', priority: 'high' }, ['priority']],
    ];
    for (const [body, fields] of refusals) {
      const problem = expectProblem(await send(t, owner.headers, gateway.deviceId, body as never), 400, 'VALIDATION_FAILED');
      expect({ body, fields: fieldsOf(problem) }).toEqual({ body, fields });
    }
    expect(await storedCommands(t, gateway.deviceId)).toEqual([]);
    expect(await eventTypes(t, gateway.deviceId)).toEqual([]);
  });

  it('lets owners, installers, administrators and write keys send; viewers and read keys only read; others get a 404', async () => {
    const gateway = await aGateway(t, owner);
    const [installer, viewer, stranger, admin] = [await aCustomer(t), await aCustomer(t), await aCustomer(t), await anAdmin(t)];
    for (const [who, role] of [[installer, 'installer'], [viewer, 'viewer']] as const) {
      const shared = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateway.deviceId } }, body: { email: who.email, role }, headers: owner.headers });
      expect(shared.response.status).toBe(201);
    }
    const readKey = (await t.api.POST('/api/v1/user/api-keys', { body: { name: 'read', scope: 'read' }, headers: owner.headers })).data!.key;
    const writeKey = (await t.api.POST('/api/v1/user/api-keys', { body: { name: 'write', scope: 'write' }, headers: owner.headers })).data!.key;

    expect((await send(t, installer.headers, gateway.deviceId, { type: 'ping' })).response.status).toBe(201);
    expect((await send(t, admin.headers, gateway.deviceId, { type: 'ping' })).response.status).toBe(201);
    expect((await send(t, bearer(writeKey), gateway.deviceId, { type: 'ping' })).response.status).toBe(201);
    expectProblem(await send(t, viewer.headers, gateway.deviceId, { type: 'ping' }), 403, 'SHARE_ROLE');
    expectProblem(await send(t, bearer(readKey), gateway.deviceId, { type: 'ping' }), 403, 'API_KEY_SCOPE');
    expectProblem(await send(t, stranger.headers, gateway.deviceId, { type: 'ping' }), 404, 'NOT_FOUND');
    expectProblem(await send(t, owner.headers, 'gw-does-not-exist', { type: 'ping' }), 404, 'NOT_FOUND');

    const listed = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: gateway.deviceId } }, headers: bearer(readKey) });
    expect(listed.data!.items).toHaveLength(3);
    expect((await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: gateway.deviceId } }, headers: viewer.headers })).data!.items).toHaveLength(3);
    const commandId = listed.data!.items[0].commandId;
    expectProblem(await getCommand(t, stranger.headers, gateway.deviceId, commandId), 404, 'NOT_FOUND');
    expectProblem(await cancel(t, viewer.headers, gateway.deviceId, commandId), 403, 'SHARE_ROLE');
    expect(await storedCommands(t, gateway.deviceId)).toEqual(Array(3).fill({ type: 'ping', state: 'queued', deliveries: 0 }));

    // Another gateway cannot see or answer this one's commands.
    const other = await aGateway(t, stranger);
    expect((await poll(t, other)).data!.commands).toEqual([]);
    expectProblem(await report(t, other, commandId, { status: 'succeeded' }), 404, 'NOT_FOUND');
    expectProblem(await report(t, other, 'cmd_x', { status: 'succeeded' }), 404, 'NOT_FOUND');
  });

  it('queues at most 20 per device (429), and cancelling one makes room', async () => {
    const gateway = await aGateway(t, owner);
    const queued: Command[] = [];
    for (let i = 0; i < 20; i++) queued.push(await sent(t, owner.headers, gateway.deviceId, { type: 'ping' }));
    const refused = expectProblem(await send(t, owner.headers, gateway.deviceId, { type: 'reboot' }), 429, 'TOO_MANY_COMMANDS');
    expect(refused.status).toBe(429);
    expect((await storedCommands(t, gateway.deviceId)).length).toBe(20);

    const cancelled = await cancel(t, owner.headers, gateway.deviceId, queued[0].commandId);
    expect(cancelled.data).toEqual(expect.objectContaining({ commandId: queued[0].commandId, state: 'cancelled' }));
    expect((await cancel(t, owner.headers, gateway.deviceId, queued[0].commandId)).data!.state).toBe('cancelled');
    expect((await send(t, owner.headers, gateway.deviceId, { type: 'reboot' })).response.status).toBe(201);
    expect((await t.db.query("SELECT count(*)::int AS n FROM audit_log WHERE device_id = $1 AND action = 'device.command_cancelled'", [gateway.deviceId])).rows[0].n).toBe(1);

    // A cancelled command is not handed out; a delivered one can no longer be cancelled.
    const handed = (await poll(t, gateway)).data!.commands.map((command) => command.commandId);
    expect(handed).toHaveLength(20);
    expect(handed).not.toContain(queued[0].commandId);
    expectProblem(await cancel(t, owner.headers, gateway.deviceId, queued[1].commandId), 409, 'COMMAND_NOT_QUEUED');
    expectProblem(await report(t, gateway, queued[0].commandId, { status: 'succeeded' }), 409, 'COMMAND_FINISHED');
  });

  it('expires a command its gateway never answers, from the job queue', async () => {
    const gateway = await aGateway(t, owner);
    const command = await sent(t, owner.headers, gateway.deviceId, { type: 'reboot', ttlSec: 1 });
    expect((await poll(t, gateway)).data!.commands).toHaveLength(1);
    await eventually(async () => {
      expect((await getCommand(t, owner.headers, gateway.deviceId, command.commandId)).data!.state).toBe('expired');
    });
    expect((await poll(t, gateway)).data!.commands).toEqual([]);
    expect(await eventTypes(t, gateway.deviceId)).toEqual(['command.queued', 'command.delivered', 'command.expired']);
    expectProblem(await report(t, gateway, command.commandId, { status: 'succeeded' }), 409, 'COMMAND_FINISHED');
  });

  it('does not hand out a command whose time ran out, before its job runs', async () => {
    const gateway = await aGateway(t, owner);
    await sent(t, owner.headers, gateway.deviceId, { type: 'ping', ttlSec: 60 });
    t.clock.advanceMs(61_000);
    try {
      expect((await poll(t, gateway)).data!.commands).toEqual([]);
    } finally {
      t.clock.reset();
    }
  });

  it('holds a long poll until a command comes, and answers 304 when the wait ends with nothing new', async () => {
    const gateway = await aGateway(t, owner);
    const idle = await poll(t, gateway);
    const etag = idle.response.headers.get('etag')!;
    const started = Date.now();
    expect((await poll(t, gateway, { etag, waitSec: 1 })).response.status).toBe(304);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    const held = poll(t, gateway, { etag, waitSec: 20 });
    // Sent once the poll waits (its waiter is registered): the answer must come from the wake-up, not the first read.
    await eventually(async () => expect(await waitingPolls(t)).toBe(1));
    const sentAt = Date.now();
    const command = await sent(t, owner.headers, gateway.deviceId, { type: 'ping' });
    const answer = await held;
    expect(answer.response.status).toBe(200);
    expect(answer.data!.commands.map((pending) => pending.commandId)).toEqual([command.commandId]);
    expect(Date.now() - sentAt).toBeLessThan(2000);
  });

  it('keeps holding a long poll that an announcement wakes for nothing the gateway lacks, and answers the next command', async () => {
    const gateway = await aGateway(t, owner);
    const etag = (await poll(t, gateway)).response.headers.get('etag')!;
    let answered = false;
    const held = poll(t, gateway, { waitSec: 20, etag }).finally(() => (answered = true));
    await eventually(async () => expect(await waitingPolls(t)).toBe(1));
    // What the echo of this instance's own change does when it arrives late: an announcement for the device, its commands unchanged.
    t.app.get(ChangeFeed).changed('device_command', gateway.deviceId);
    expect(await waitingPolls(t)).toBe(0);
    await eventually(async () => expect(await waitingPolls(t)).toBe(1));
    expect(answered).toBe(false);
    const command = await sent(t, owner.headers, gateway.deviceId, { type: 'ping' });
    const answer = await held;
    expect(answer.response.status).toBe(200);
    expect(answer.data!.commands.map((pending) => pending.commandId)).toEqual([command.commandId]);
  });

  it('frees a long poll\'s place as soon as its gateway hangs up', async () => {
    const gateway = await aGateway(t, owner);
    const etag = (await poll(t, gateway)).response.headers.get('etag')!;
    const hangUp = new AbortController();
    const held = t.api.GET('/api/v1/device/commands', { params: { query: { waitSec: 30 } }, headers: { ...gateway.headers, 'if-none-match': etag }, signal: hangUp.signal }).catch((error: unknown) => error);
    await eventually(async () => expect(await waitingPolls(t)).toBe(1));
    hangUp.abort();
    expect(await held).toEqual(expect.objectContaining({ name: 'AbortError' }));
    await eventually(async () => expect(await waitingPolls(t)).toBe(0), 5000);
  });

  it('refuses a waitSec out of 1–30, or not written as a decimal integer (0x10 is not 16), at once', async () => {
    const gateway = await aGateway(t, owner);
    for (const waitSec of [0, 31]) expectProblem(await poll(t, gateway, { waitSec }), 400, 'VALIDATION_FAILED');
    for (const written of ['0x10', '1e1', '0.1e1', '+5', ' 5']) {
      const startedAt = Date.now();
      const answer = await t.api.GET('/api/v1/device/commands', { params: { query: { waitSec: written as unknown as number } }, headers: gateway.headers });
      expect(fields(expectProblem(answer, 400, 'VALIDATION_FAILED'))).toEqual(['waitSec']);
      expect(Date.now() - startedAt).toBeLessThan(5000);
    }
    // The same for every integer of a query: a page's limit.
    const listed = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: gateway.deviceId }, query: { limit: '0x10' as unknown as number } }, headers: owner.headers });
    expect(fields(expectProblem(listed, 400, 'VALIDATION_FAILED'))).toEqual(['limit']);
  });
});

/** The fields a validation problem names. */
const fields = (problem: object) => [...new Set(((problem as { errors?: { field: string }[] }).errors ?? []).map((error) => error.field))];

/** Long polls waiting on this instance, as the service counts them. */
async function waitingPolls(t: TestApp): Promise<number> {
  const { CommandWaiters } = await import('../../src/modules/commands/index.js');
  return t.app.get(CommandWaiters).size;
}

describe('commands across instances', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let settings: Record<string, string>;
  let instances: { a: TestApp; b: TestApp };

  beforeAll(async () => {
    database = await createTestDatabase();
    // A client has REQUEST_TIMEOUT_MS to send its request; a long poll's wait is the service's, not the client's.
    settings = { ...sharedSecrets(), REQUEST_TIMEOUT_MS: '1000' };
    instances = { a: await startTestApp(database.url, settings), b: await startTestApp(database.url, settings) };
  });

  afterAll(async () => {
    await instances?.a.close();
    await instances?.b.close();
    await database?.drop();
  });

  it('wakes a long poll held on one instance when the command is sent on the other', async () => {
    const { a, b } = instances;
    const owner = await aCustomer(a);
    const gateway = await aGateway(a, owner);
    const latencies: number[] = [];
    for (let i = 0; i < 3; i++) {
      const held = poll(b, gateway, { waitSec: 20, etag: (await poll(b, gateway)).response.headers.get('etag')! });
      await eventually(async () => expect(await waitingPolls(b)).toBe(1));
      const sentAt = Date.now();
      const command = await sent(a, owner.headers, gateway.deviceId, { type: 'ping' });
      const answer = await held;
      latencies.push(Date.now() - sentAt);
      expect(answer.data!.commands.map((pending) => pending.commandId)).toContain(command.commandId);
      expect((await report(b, gateway, command.commandId, { status: 'succeeded' })).data!.state).toBe('succeeded');
    }
    process.stderr.write(`commands across instances: long poll answered ${latencies.join(', ')} ms after the send\n`);
    expect(Math.max(...latencies)).toBeLessThan(1000);
  });

  it('answers the polls an instance holds when it shuts down; the next poll, on another instance, gets the command', async () => {
    const { a } = instances;
    const c = await startTestApp(database.url, settings);
    const owner = await aCustomer(a);
    const gateway = await aGateway(a, owner);
    let closed = false;
    try {
      const etag = (await poll(c, gateway)).response.headers.get('etag')!;
      const held = poll(c, gateway, { waitSec: 30, etag });
      await eventually(async () => expect(await waitingPolls(c)).toBe(1));
      const closing = Date.now();
      await c.close();
      closed = true;
      expect((await held).response.status).toBe(304);
      expect(Date.now() - closing).toBeLessThan(10_000);
    } finally {
      if (!closed) await c.close();
    }
    const command = await sent(a, owner.headers, gateway.deviceId, { type: 'reboot' });
    expect((await poll(a, gateway)).data!.commands.map((pending) => pending.commandId)).toEqual([command.commandId]);
  });

  it('holds a long poll past REQUEST_TIMEOUT_MS, which limits only how long the client takes to send', async () => {
    const { a } = instances;
    const gateway = await aGateway(a, await aCustomer(a));
    const etag = (await poll(a, gateway)).response.headers.get('etag')!;
    const started = Date.now();
    expect((await poll(a, gateway, { etag, waitSec: 3 })).response.status).toBe(304);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
  });
});

describe('an instance killed while a gateway holds a long poll', () => {
  let main = '';
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let settings: Record<string, string>;
  let survivor: TestApp;
  let doomed: Running | undefined;

  beforeAll(async () => {
    main = await buildService();
    database = await createTestDatabase();
    settings = sharedSecrets();
    survivor = await startTestApp(database.url, settings);
  }, 180_000);

  afterAll(async () => {
    await killService(doomed);
    await survivor?.close();
    await database?.drop();
  });

  it('loses only the poll: the command sent meanwhile reaches the gateway on its next poll, from another instance', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    doomed = await startService(main, { PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(metricsPort), DATA_DIR: scratchDir(), DATABASE_URL: database.url, ...settings });
    await waitUntilReady(port);
    const owner = await aCustomer(survivor);
    const gateway = await aGateway(survivor, owner);
    const idle = await httpCall(port, { path: '/api/v1/device/commands', headers: gateway.headers });
    expect(idle.status).toBe(200);
    const held = httpCall(port, { path: '/api/v1/device/commands?waitSec=30', headers: { ...gateway.headers, 'if-none-match': String(idle.headers.etag) } }).then(
      (answer) => ({ status: answer.status }),
      (error: NodeJS.ErrnoException) => ({ failed: error.code ?? error.message }),
    );
    const heldPolls = async () => Number(/^dcs_command_long_polls (\d+)$/m.exec((await httpCall(metricsPort, { path: '/metrics' })).body)?.[1]);
    await eventually(async () => expect(await heldPolls()).toBe(1));

    // Frozen, the instance cannot answer the poll when the command comes; then it dies.
    doomed.child.kill('SIGSTOP');
    const command = await sent(survivor, owner.headers, gateway.deviceId, { type: 'upload-now' });
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    expect(await held).toEqual({ failed: expect.any(String) });

    const next = await poll(survivor, gateway, { etag: String(idle.headers.etag) });
    expect(next.response.status).toBe(200);
    expect(next.data!.commands.map((pending) => pending.commandId)).toEqual([command.commandId]);
    expect((await report(survivor, gateway, command.commandId, { status: 'succeeded' })).data!.state).toBe('succeeded');
  });
});
