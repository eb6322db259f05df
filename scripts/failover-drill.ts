/**
 * `npm run drill:failover`: the service on PostgreSQL's own high-availability stack, failed over
 * twice under load. In a temporary directory: etcd, two PostgreSQL 15 nodes run by Patroni in
 * synchronous mode, and HAProxy whose port leads to the node Patroni's REST API calls primary
 * (`on-marked-down shutdown-sessions`). The service runs on HAProxy's port with the gateway
 * simulator, a probe gateway that uploads a record every 50 ms, and an administrator's dashboard
 * stream. Then (a) the leader's Patroni and PostgreSQL are killed with SIGKILL, and, once the old
 * node is back as a synchronous standby, (b) a planned `patronictl switchover`. For each: the window
 * of 503s, the first write stored after it, 500s (must be 0), acknowledged records missing from the
 * database afterwards (must be 0), and whether the stream carries telemetry again. A verification
 * mail queued before the kill, while the mail server is down, must go out exactly once after it
 * (the job queue lives in the same PostgreSQL). Exits 1 when a
 * bound is missed, 2 when a package is missing (it installs nothing: apt-get install patroni
 * etcd-server haproxy postgresql-15). Report: test-output/drill/failover-last-run.md.
 *
 * Runs with Node 24's type stripping (erasable TypeScript only) on the build in dist/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PG_BIN = '/usr/lib/postgresql/15/bin';
const ADMIN = { email: 'drill-admin@example.com', password: 'keeper-of-the-fleet-7' };
const DATABASE = 'device_cloud';

const log = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

function missingPackages(): string[] {
  const missing: string[] = [];
  const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
  if (!has('patroni') || !has('patronictl')) missing.push('patroni');
  if (!has('etcd')) missing.push('etcd-server');
  if (!has('haproxy')) missing.push('haproxy');
  if (!existsSync(join(PG_BIN, 'postgres'))) missing.push('postgresql-15');
  return missing;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Thrown inside an `until` probe: stop waiting at once. */
class Stop extends Error {}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof Stop) throw error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(250);
  }
}

const children: ChildProcess[] = [];
/** Starts a long-running process, its output in <dir>/<name>.log; as the postgres user when `asPostgres` and run as root. */
function start(dir: string, name: string, command: string, args: string[], options: { asPostgres?: boolean; env?: Record<string, string> } = {}): ChildProcess {
  const asUser = options.asPostgres && process.getuid?.() === 0;
  const child = spawn(asUser ? 'runuser' : command, asUser ? ['-u', 'postgres', '--', command, ...args] : args, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const out = join(dir, `${name}.log`);
  writeFileSync(out, '');
  const append = (chunk: Buffer) => writeFileSync(out, chunk, { flag: 'a' });
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  children.push(child);
  return child;
}

interface Node {
  name: string;
  pgPort: number;
  apiPort: number;
  config: string;
  dataDir: string;
  process?: ChildProcess;
}

function patroniConfig(dir: string, node: Node, etcdPort: number): string {
  return `scope: dcs-drill
name: ${node.name}
restapi:
  listen: 127.0.0.1:${node.apiPort}
  connect_address: 127.0.0.1:${node.apiPort}
etcd:
  host: 127.0.0.1:${etcdPort}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: 'on'
        max_connections: 200
  initdb:
  - encoding: UTF8
  - locale: C
  pg_hba:
  - local all all trust
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${node.dataDir}
  bin_dir: ${PG_BIN}
  pgpass: ${join(dir, `${node.name}.pgpass`)}
  authentication:
    replication: {username: replicator, password: drill-replicator}
    superuser: {username: postgres, password: drill-postgres}
    rewind: {username: rewinder, password: drill-rewinder}
  parameters:
    unix_socket_directories: '${dir}'
    fsync: 'on'
`;
}

interface ClusterMember {
  name: string;
  role: string;
  state: string;
}

async function cluster(node: Node): Promise<ClusterMember[]> {
  const response = await fetch(`http://127.0.0.1:${node.apiPort}/cluster`, { signal: AbortSignal.timeout(2000) });
  return ((await response.json()) as { members: ClusterMember[] }).members;
}

/** Waits until one node leads and the other streams to it as its synchronous standby. */
async function healthyPair(nodes: Node[]): Promise<{ leader: Node; standby: Node }> {
  return until('a leader with a streaming synchronous standby', 120_000, async () => {
    for (const node of nodes) {
      const members = await cluster(node).catch(() => undefined);
      if (!members) continue;
      const leader = members.find((member) => member.role === 'leader' && member.state === 'running');
      const standby = members.find((member) => member.role === 'sync_standby' && (member.state === 'streaming' || member.state === 'running'));
      if (leader && standby) return { leader: nodes.find((n) => n.name === leader.name)!, standby: nodes.find((n) => n.name === standby.name)! };
    }
    return undefined;
  });
}

/** One upload a 50 ms apart from a gateway of its own: when each answered, and with what. */
class Probe {
  readonly answers: Array<{ sent: number; at: number; status: number }> = [];
  readonly acknowledged: string[] = [];
  private running = true;
  private done: Promise<void> | undefined;
  private token = '';
  private readonly baseUrl: string;
  readonly deviceId: string;

  constructor(baseUrl: string, deviceId: string) {
    this.baseUrl = baseUrl;
    this.deviceId = deviceId;
  }

  async begin(): Promise<void> {
    const registered = await fetch(`${this.baseUrl}/api/v1/device/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: this.deviceId, hardwareId: 'hw-drill', firmwareVersion: '0.1.3' }),
    });
    if (registered.status !== 201) throw new Error(`the probe's registration answered ${registered.status}`);
    this.token = ((await registered.json()) as { accessToken: string }).accessToken;
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    let n = 0;
    while (this.running) {
      const sent = Date.now();
      const ts = new Date(sent - 1000).toISOString();
      let status: number;
      try {
        const response = await fetch(`${this.baseUrl}/api/v1/telemetry`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
          body: JSON.stringify({ records: [{ ts, batteryId: 'main', metrics: { soc: 50 + (n % 50), voltage: 13.1 } }] }),
          signal: AbortSignal.timeout(15_000),
        });
        status = response.status;
        await response.arrayBuffer();
      } catch {
        status = 0;
      }
      this.answers.push({ sent, at: Date.now(), status });
      if (status === 200) this.acknowledged.push(ts);
      n += 1;
      await sleep(50);
    }
  }

  async end(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /**
   * What the probe saw from `from` (the action) on: the longest time without an acknowledged write
   * (between two 200s, the last one before the action included), the first 200 after the last
   * failure (from the action), and the answers other than 200.
   */
  window(from: number): { unavailableMs: number; firstWriteAfterMs: number | null; non200: Record<string, number> } {
    const after = this.answers.filter((answer) => answer.at >= from);
    const non200: Record<string, number> = {};
    for (const answer of after) if (answer.status !== 200) non200[answer.status] = (non200[answer.status] ?? 0) + 1;
    const lastFailure = after.findLast((answer) => answer.status !== 200);
    const firstWrite = after.find((answer) => answer.status === 200 && (!lastFailure || answer.sent > lastFailure.at));
    const oks = [this.answers.findLast((answer) => answer.at < from && answer.status === 200), ...after.filter((answer) => answer.status === 200)].filter((answer) => answer !== undefined);
    let unavailableMs = 0;
    for (let i = 1; i < oks.length; i++) unavailableMs = Math.max(unavailableMs, oks[i].at - oks[i - 1].at);
    return { unavailableMs, firstWriteAfterMs: firstWrite ? firstWrite.at - from : null, non200 };
  }
}

/** A mail server that counts what it accepts, per recipient; started only when the drill says so. */
class MailSink {
  readonly received = new Map<string, number>();
  private server: SMTPServer | undefined;

  async listen(port: number): Promise<void> {
    const received = this.received;
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        stream.on('data', () => undefined);
        stream.on('end', () => {
          for (const recipient of session.envelope.rcptTo) received.set(recipient.address.toLowerCase(), (received.get(recipient.address.toLowerCase()) ?? 0) + 1);
          callback();
        });
      },
    });
    await new Promise<void>((done) => this.server!.listen(port, '127.0.0.1', () => done()));
  }

  async close(): Promise<void> {
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }
}

/** An administrator's dashboard stream: when each telemetry event of the probe arrived. */
class Stream {
  readonly telemetryAt: number[] = [];
  private readonly abort = new AbortController();

  async open(baseUrl: string, deviceId: string): Promise<void> {
    const login = await fetch(`${baseUrl}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
    if (login.status !== 200) throw new Error(`the administrator's login answered ${login.status}`);
    const { accessToken } = (await login.json()) as { accessToken: string };
    const ticket = await fetch(`${baseUrl}/api/v1/dashboard/stream/tickets`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } });
    if (ticket.status !== 201) throw new Error(`the stream ticket answered ${ticket.status}`);
    const response = await fetch(`${baseUrl}/api/v1/dashboard/stream?ticket=${((await ticket.json()) as { ticket: string }).ticket}`, { signal: this.abort.signal });
    if (response.status !== 200 || !response.body) throw new Error(`the stream answered ${response.status}`);
    void (async () => {
      const decoder = new TextDecoder();
      let buffered = '';
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffered += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const frame = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            if (frame.includes('event: telemetry') && frame.includes(deviceId)) this.telemetryAt.push(Date.now());
          }
        }
      } catch {
        // closed
      }
    })();
  }

  close(): void {
    this.abort.abort();
  }
}

interface Episode {
  name: string;
  unavailableMs: number;
  firstWriteAfterMs: number | null;
  non200: Record<string, number>;
  streamResumedMs: number | null;
}

/** SIGKILL to the node's Patroni (its whole process group: runuser and Patroni) and to its postmaster. */
async function killNode(node: Node): Promise<void> {
  const postmaster = Number(readFileSync(join(node.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (node.process?.pid) process.kill(-node.process.pid, 'SIGKILL');
  process.kill(postmaster, 'SIGKILL');
}

async function main(): Promise<void> {
  const missing = missingPackages();
  if (missing.length > 0) {
    process.stderr.write(`The failover drill needs Debian packages that are not installed: ${missing.join(' ')}\n  apt-get install -y ${missing.join(' ')}\n`);
    process.exit(2);
  }
  const entry = join(root, 'dist', 'src', 'main.js');
  if (!existsSync(entry)) throw new Error('dist/src/main.js is missing: run npm run build (npm run drill:failover does)');
  const outputDir = join(root, 'test-output', 'drill');
  mkdirSync(outputDir, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'dcs-drill-'));
  if (process.getuid?.() === 0) spawnSync('chown', ['-R', 'postgres:postgres', dir]);
  log(`Drill directory ${dir}; process logs there.`);

  const [etcdPort, etcdPeerPort, haproxyPort, servicePort, smtpPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const mail = new MailSink();
  const nodes: Node[] = [];
  for (const name of ['node1', 'node2']) {
    const node: Node = { name, pgPort: await freePort(), apiPort: await freePort(), config: join(dir, `${name}.yml`), dataDir: join(dir, name) };
    writeFileSync(node.config, patroniConfig(dir, node, etcdPort));
    nodes.push(node);
  }
  if (process.getuid?.() === 0) for (const node of nodes) chownSync(node.config, Number(spawnSync('id', ['-u', 'postgres']).stdout), Number(spawnSync('id', ['-g', 'postgres']).stdout));

  let simulator: ChildProcess | undefined;
  const episodes: Episode[] = [];
  let passed = false;
  try {
    start(dir, 'etcd', 'etcd', [
      '--name', 'drill', '--data-dir', join(dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcdPort}`, '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeerPort}`,
      '--initial-cluster', `drill=http://127.0.0.1:${etcdPeerPort}`, '--enable-v2=true',
    ], { asPostgres: true });
    await until('etcd', 30_000, async () => ((await fetch(`http://127.0.0.1:${etcdPort}/health`)).ok ? true : undefined));
    const clusterStarted = Date.now();
    nodes[0].process = start(dir, nodes[0].name, 'patroni', [nodes[0].config], { asPostgres: true });
    await until('the first node to lead', 90_000, async () => ((await fetch(`http://127.0.0.1:${nodes[0].apiPort}/primary`)).status === 200 ? true : undefined));
    nodes[1].process = start(dir, nodes[1].name, 'patroni', [nodes[1].config], { asPostgres: true });
    await healthyPair(nodes);
    log(`Patroni cluster up in ${((Date.now() - clusterStarted) / 1000).toFixed(1)} s: ${nodes[0].name} leads, ${nodes[1].name} its synchronous standby.`);

    const haproxyConfig = join(dir, 'haproxy.cfg');
    writeFileSync(
      haproxyConfig,
      `global
  maxconn 400
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 2s
listen primary
  bind 127.0.0.1:${haproxyPort}
  option httpchk OPTIONS /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} maxconn 200 check port ${node.apiPort}`).join('\n')}
`,
    );
    start(dir, 'haproxy', 'haproxy', ['-f', haproxyConfig, '-db']);
    const endpoint = (database: string) => `postgres://postgres:drill-postgres@127.0.0.1:${haproxyPort}/${database}`;
    // HAProxy starts with every server up and marks the standby down after two failed checks (2 s):
    // until then a connection may reach the standby. Five in a row on the leader, after that.
    await sleep(2500);
    let onLeader = 0;
    await until('HAProxy to reach the leader', 30_000, async () => {
      const client = new pg.Client({ connectionString: endpoint('postgres'), connectionTimeoutMillis: 1000 });
      // HAProxy closes connections while it has no server up yet.
      client.on('error', () => undefined);
      await client.connect();
      try {
        const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
        onLeader = rows[0].standby ? 0 : onLeader + 1;
        return onLeader >= 5 ? true : undefined;
      } finally {
        await client.end();
      }
    });
    const admin = new pg.Client({ connectionString: endpoint('postgres') });
    admin.on('error', () => undefined);
    await admin.connect();
    await admin.query(`CREATE DATABASE ${DATABASE}`);
    await admin.end();

    const baseUrl = `http://127.0.0.1:${servicePort}`;
    const service = start(dir, 'service', process.execPath, ['--max-semi-space-size=4', '--heap-growing-percent=30', entry], {
      env: {
        // Not NODE_ENV=production: that refuses delivery retries shorter than 24 h in all, and the
        // drill retries the queued mail every 1–2 s so it sees the delivery within seconds.
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(servicePort),
        DATA_DIR: join(dir, 'service-data'),
        DATABASE_URL: endpoint(DATABASE),
        DEVICE_JWT_SECRET: randomBytes(32).toString('base64url'),
        CUSTOMER_JWT_SECRET: randomBytes(32).toString('base64url'),
        SECRET_PEPPER: randomBytes(32).toString('base64url'),
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        REGISTRATION_MAX_PER_ADDRESS: '1000',
        // Nothing listens there until after the kill: the verification mail waits in the job queue, retried every 1–2 s.
        SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
        DELIVERY_RETRY_DELAY_SEC: '1',
        DELIVERY_RETRY_DELAY_MAX_SEC: '2',
        TELEMETRY_MAX_REQUESTS_PER_DEVICE: '100000',
      },
    });
    await until('the service to be ready', 60_000, async () => {
      if (service.exitCode !== null) throw new Stop(`the service exited with ${service.exitCode}; see ${join(dir, 'service.log')}`);
      return (await fetch(`${baseUrl}/health/ready`)).ok ? true : undefined;
    });
    log(`Service up on ${baseUrl}, its database through HAProxy.`);

    const simulatorOut = join(dir, 'simulator.json');
    simulator = spawn(process.execPath, [join(root, 'examples', 'gateway-simulator.ts'), '--url', baseUrl, '--gateways', '8', '--interval', '0.2', '--batch', '5', '--json', '--prefix', 'drill'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    children.push(simulator);
    let simulatorJson = '';
    simulator.stdout?.on('data', (chunk: Buffer) => (simulatorJson += chunk.toString()));
    const simulatorExited = new Promise<void>((done) => simulator!.once('exit', () => done()));

    const probe = new Probe(baseUrl, `drill-probe-${Date.now().toString(36)}`);
    await probe.begin();
    const stream = new Stream();
    await stream.open(baseUrl, probe.deviceId);
    const customer = `drill-${Date.now().toString(36)}@example.com`;
    const signup = await fetch(`${baseUrl}/api/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: customer, password: 'drill-customer-password-1' }),
    });
    if (signup.status !== 201) throw new Error(`the signup answered ${signup.status}`);
    await sleep(5000);

    const episode = async (name: string, act: () => Promise<void>) => {
      const from = Date.now();
      await act();
      // Over when 15 s have passed (longer than Patroni's ttl of 10 s) and the last 3 s were all 200s.
      await until(`writes after the ${name}`, 90_000, async () => {
        const now = Date.now();
        const recent = probe.answers.filter((answer) => answer.at > now - 3000);
        return now - from >= 15_000 && recent.length > 0 && recent.every((answer) => answer.status === 200) ? true : undefined;
      });
      const seen = probe.window(from);
      const written = from + (seen.firstWriteAfterMs ?? 0);
      const streamAt = await until(`the stream after the ${name}`, 30_000, async () => stream.telemetryAt.find((at) => at > written)).catch(() => null);
      const settled = probe.window(from);
      episodes.push({ name, ...settled, streamResumedMs: streamAt === null ? null : streamAt - from });
      log(`${name}: longest without an acknowledged write ${settled.unavailableMs} ms, first write ${settled.firstWriteAfterMs} ms after, answers other than 200 ${JSON.stringify(settled.non200)}, stream ${streamAt === null ? 'did not resume' : `resumed ${streamAt - from} ms after`}.`);
    };

    const before = await healthyPair(nodes);
    await episode(`kill of the leader (${before.leader.name}: Patroni and PostgreSQL, SIGKILL)`, () => killNode(before.leader));
    await mail.listen(smtpPort);
    log(`Mail server up: the verification mail queued before the kill may go out now.`);
    log(`Restarting ${before.leader.name}; it rejoins as a standby.`);
    before.leader.process = start(dir, `${before.leader.name}-rejoined`, 'patroni', [before.leader.config], { asPostgres: true });
    const rejoined = await healthyPair(nodes);
    log(`${rejoined.leader.name} leads, ${rejoined.standby.name} its synchronous standby again.`);
    await sleep(3000);
    await episode(`switchover (${rejoined.leader.name} → ${rejoined.standby.name}, patronictl)`, async () => {
      const asUser = process.getuid?.() === 0;
      const args = ['-c', rejoined.standby.config, 'switchover', '--candidate', rejoined.standby.name, '--force'];
      const result = spawnSync(asUser ? 'runuser' : 'patronictl', asUser ? ['-u', 'postgres', '--', 'patronictl', ...args] : args, { encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`patronictl switchover failed: ${result.stderr || result.stdout}`);
    });

    await probe.end();
    stream.close();
    const mailsSent = await until('the verification mail', 60_000, async () => mail.received.get(customer)).catch(() => 0);
    await sleep(3000);
    const mails = mail.received.get(customer) ?? 0;
    log(`Verification mail queued before the kill: delivered ${mails} time(s) (first seen: ${mailsSent > 0}).`);
    simulator.kill('SIGINT');
    await simulatorExited;
    writeFileSync(simulatorOut, simulatorJson);
    const summary = JSON.parse(simulatorJson.trim().split('\n').pop() ?? '{}') as {
      answers: Record<string, number>;
      perGateway: Array<{ deviceId: string; stored: number }>;
      telemetry: { accepted: number; unsent: number };
    };

    const db = new pg.Client({ connectionString: endpoint(DATABASE) });
    db.on('error', () => undefined);
    await db.connect();
    const { rows: probeRows } = await db.query<{ ts: Date }>('SELECT ts FROM telemetry WHERE device_id = $1', [probe.deviceId]);
    const storedTs = new Set(probeRows.map((row) => row.ts.toISOString()));
    const probeMissing = probe.acknowledged.filter((ts) => !storedTs.has(ts)).length;
    const { rows: perDevice } = await db.query<{ device_id: string; n: number }>(`SELECT device_id, count(*)::int AS n FROM telemetry WHERE device_id LIKE 'drill-%' GROUP BY device_id`);
    await db.end();
    const storedOf = new Map(perDevice.map((row) => [row.device_id, row.n]));
    const simulatorMissing = summary.perGateway.reduce((sum, gateway) => sum + Math.max(0, gateway.stored - (storedOf.get(gateway.deviceId) ?? 0)), 0);
    const simulator500s = Object.entries(summary.answers).filter(([key]) => key.startsWith('500')).reduce((sum, [, count]) => sum + count, 0);
    const probe500s = probe.answers.filter((answer) => answer.status === 500).length;

    const failures = [
      ...(probe500s + simulator500s > 0 ? [`${probe500s + simulator500s} answers were 500`] : []),
      ...(probeMissing + simulatorMissing > 0 ? [`${probeMissing + simulatorMissing} acknowledged records are missing`] : []),
      ...episodes.filter((e) => e.firstWriteAfterMs === null).map((e) => `writes did not resume after the ${e.name}`),
      ...episodes.filter((e) => e.streamResumedMs === null).map((e) => `the stream did not resume after the ${e.name}`),
      ...(mails !== 1 ? [`the mail queued before the kill was delivered ${mails} times, not once`] : []),
    ];
    const report = [
      '# Failover drill',
      '',
      `${spawnSync('patroni', ['--version'], { encoding: 'utf8' }).stdout.trim().replace('patroni', 'Patroni')}, etcd ${/Version: (\S+)/.exec(spawnSync('etcd', ['--version'], { encoding: 'utf8' }).stdout)?.[1]}, HAProxy ${/version (\S+)/.exec(spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).stdout)?.[1]}, PostgreSQL 15; two nodes in synchronous mode, ttl 10 s, loop_wait 1 s; HAProxy checks /primary every 1 s, down after 2 failures, on-marked-down shutdown-sessions.`,
      `Load: the gateway simulator (8 gateways, a sample every 0.2 s, uploads of 5), a probe gateway uploading one record every 50 ms, an administrator's dashboard stream.`,
      '',
      '| episode | longest without an acknowledged write | first acknowledged write after the action, past its last failure | answers other than 200 (probe) | stream resumed after |',
      '| --- | ---: | ---: | --- | ---: |',
      ...episodes.map((e) => `| ${e.name} | ${e.unavailableMs} ms | ${e.firstWriteAfterMs ?? 'never'} ms | ${JSON.stringify(e.non200)} | ${e.streamResumedMs ?? 'never'} ms |`),
      '',
      `- Probe: ${probe.answers.length} uploads, ${probe.acknowledged.length} acknowledged, ${probeMissing} of them missing from the database, ${probe500s} answered 500.`,
      `- Job queue: a verification mail queued before the kill (mail server down) was delivered ${mails} time(s) after it.`,
      `- Simulator: ${summary.telemetry.accepted} records accepted, ${summary.telemetry.unsent} left unsent at the stop, ${simulatorMissing} acknowledged but missing, answers ${JSON.stringify(summary.answers)}.`,
      '',
      failures.length === 0 ? 'Passed: 0 × 500, 0 acknowledged records lost, writes and the stream resumed after both, the queued mail delivered once.' : `**Failed:** ${failures.join('; ')}.`,
      '',
    ].join('\n');
    writeFileSync(join(outputDir, 'failover-last-run.md'), report);
    passed = failures.length === 0 && episodes.length === 2;
    process.stdout.write(`\n${report}`);
  } finally {
    await mail.close();
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          // gone
        }
      }
    }
    await sleep(3000);
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    // Postmasters Patroni started outlive it when it is killed: stop whatever still runs in the drill's data directories.
    for (const node of nodes) {
      if (existsSync(join(node.dataDir, 'postmaster.pid'))) {
        try {
          process.kill(Number(readFileSync(join(node.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    if (passed && !process.env.DRILL_KEEP) rmSync(dir, { recursive: true, force: true });
    else log(`Kept ${dir} (its logs) for a look.`);
  }
  if (!passed) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`The failover drill failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
