import { bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';
import { dataOf, openSse, type SseMessage, type SseStream } from '../support/sse.js';
import { ingest, iso } from '../support/telemetry.js';

/*
 * A membership that ends on one instance ends on the other at once: two instances on one
 * PostgreSQL database. The member's open dashboard stream on the other instance stops carrying the
 * organization's devices, and their access token and API key get the 404 of a device they do not
 * see there, right after the answer of the instance that took the change.
 *
 * Why an absent frame means something: the change (its NOTIFY sent at commit) and each reading
 * passed between instances (pg_notify on the telemetry channel) reach an instance over its one
 * LISTEN connection, in commit order, and its streams get each reading in the order heard. A reading
 * uploaded after the change's answer, to the instance that took the change, is therefore heard after
 * the change; once a later reading of the member's own device is on their stream, the
 * organization's reading would have been before it.
 */

const telemetryOf = (deviceId: string, soc: number) => (message: SseMessage) =>
  message.event === 'telemetry' && dataOf<{ deviceId: string; metrics: { soc: number } }>(message).deviceId === deviceId && dataOf<{ metrics: { soc: number } }>(message).metrics.soc === soc;

describe('a membership ended on one instance, across two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;
  const streams: SseStream[] = [];

  beforeAll(async () => {
    ({ a, b, close } = await startTwoInstances());
  });
  afterEach(() => {
    for (const opened of streams.splice(0)) opened.close();
  });
  afterAll(async () => {
    await close?.();
  });

  async function stream(t: TestApp, who: SignedIn): Promise<SseStream> {
    const opened = await openSse(new URL('/api/v1/dashboard/stream', t.baseUrl).toString(), { authorization: `Bearer ${who.accessToken}` });
    streams.push(opened);
    expect(opened.status).toBe(200);
    return opened;
  }

  let clock = Date.now() - 60_000;
  async function sent(t: TestApp, device: { registered: { accessToken: string } }, soc: number): Promise<void> {
    clock += 1000;
    const { response } = await ingest(t.api, device.registered.accessToken, [{ ts: iso(clock), metrics: { soc } }]);
    expect(response.status).toBe(200);
  }

  const detail = (t: TestApp, headers: { authorization: string }, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers });

  /**
   * An organization of `owner` (made on A) with `member` invited as `role`, owning one device; the
   * member's own personal device; and a read key of the member's.
   */
  async function anOrganizationWithMember(role: 'operator' | 'viewer') {
    const owner = await aCustomer(a);
    const member = await aCustomer(b);
    const created = await a.api.POST('/api/v1/organizations', { body: { name: 'Solar Installers Ltd' }, headers: owner.headers });
    expect(created.response.status).toBe(201);
    const organizationId = created.data!.organizationId;
    const invited = await a.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: member.email, role }, headers: owner.headers });
    expect(invited.response.status).toBe(201);
    const device = await aRegisteredDevice(a);
    expect((await claim(a, owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    const personal = await aClaimedDevice(b, member);
    const key = await b.api.POST('/api/v1/user/api-keys', { body: { name: 'home automation', scope: 'read' }, headers: member.headers });
    expect(key.response.status).toBe(201);
    return { owner, member, organizationId, memberId: invited.data!.memberId, device, personal, memberKey: bearer(key.data!.key) };
  }

  /**
   * The whole story: the member watches on `watched`, the membership ends through `changed` (by
   * `end`), the devices upload to `changed`; the member loses the organization's device on `watched`
   * at once, keeps their own.
   */
  async function endsAtOnce(changed: TestApp, watched: TestApp, role: 'operator' | 'viewer', end: (fixture: Awaited<ReturnType<typeof anOrganizationWithMember>>) => Promise<{ response: Response }>) {
    const fixture = await anOrganizationWithMember(role);
    const { owner, member, device, personal, memberKey } = fixture;
    const deviceId = device.body.deviceId;
    const memberWatching = await stream(watched, member);
    const ownerWatching = await stream(watched, owner);

    await sent(changed, device, 71);
    await memberWatching.next(telemetryOf(deviceId, 71));
    await ownerWatching.next(telemetryOf(deviceId, 71));
    expect([(await detail(watched, member.headers, deviceId)).response.status, (await detail(watched, memberKey, deviceId)).response.status]).toEqual([200, 200]);

    expect((await end(fixture)).response.status).toBe(204);

    expectProblem(await detail(watched, member.headers, deviceId), 404, 'NOT_FOUND');
    expectProblem(await detail(watched, memberKey, deviceId), 404, 'NOT_FOUND');
    await sent(changed, device, 72);
    await ownerWatching.next(telemetryOf(deviceId, 72));
    await sent(changed, personal, 5);
    await memberWatching.next(telemetryOf(personal.body.deviceId, 5));
    expect(memberWatching.messages.filter(telemetryOf(deviceId, 72))).toEqual([]);
    expect(memberWatching.ended).toBe(false);
    // The member's own device stays theirs everywhere.
    expect((await detail(watched, memberKey, personal.body.deviceId)).response.status).toBe(200);
  }

  it("a member removed through A loses the organization's device on B at once: their open stream there, their token and their API key", async () => {
    await endsAtOnce(a, b, 'viewer', ({ owner, organizationId, memberId }) =>
      a.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, headers: owner.headers }),
    );
  });

  it("a member who leaves through B loses the organization's device on A at once: their open stream there, their token and their API key", async () => {
    await endsAtOnce(b, a, 'operator', ({ member, organizationId, memberId }) =>
      b.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, headers: member.headers }),
    );
  });
});
