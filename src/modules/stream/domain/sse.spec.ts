import { jest } from '@jest/globals';
import { decodePayload, encodeMessage, encodeWatching, LiveBus, WATCHING_LEASE_MS, type TelemetryMessage } from './live-bus.js';
import { eventFrame, joinFrames, telemetryFrame } from './sse.js';

describe('SSE frames', () => {
  it('a record is one telemetry message without an id, its data one line of JSON', () => {
    const frame = telemetryFrame('gw-1', { batteryId: 'main', ts: new Date('2026-11-25T12:00:00Z'), metrics: { soc: 81.5, voltage: 13.2 } });
    expect(frame).toBe('event: telemetry\ndata: {"deviceId":"gw-1","batteryId":"main","ts":"2026-11-25T12:00:00.000Z","metrics":{"soc":81.5,"voltage":13.2}}\n\n');
  });

  it('an event carries its id and type, and a line break in its data stays inside the JSON', () => {
    const frame = eventFrame({ id: 'evt_7', type: 'alert.opened', deviceId: 'gw-1', occurredAt: new Date('2026-11-25T12:00:00Z'), data: { note: 'two\nlines\r\n' } });
    expect(frame.split('\n\n')).toEqual([
      'id: evt_7\nevent: alert.opened\ndata: {"id":"evt_7","type":"alert.opened","deviceId":"gw-1","occurredAt":"2026-11-25T12:00:00.000Z","data":{"note":"two\\nlines\\r\\n"}}',
      '',
    ]);
  });

  it('joins frames into pieces no longer than the limit, in order, splitting only between frames', () => {
    const frames = ['a'.repeat(30), 'b'.repeat(30), 'c'.repeat(50), 'd'.repeat(120), 'e'.repeat(10)];
    const pieces = joinFrames(frames, 100);
    expect(pieces).toEqual(['a'.repeat(30) + 'b'.repeat(30), 'c'.repeat(50), 'd'.repeat(120), 'e'.repeat(10)]);
    expect(pieces.join('')).toBe(frames.join(''));
    expect(joinFrames([], 100)).toEqual([]);
  });
});

describe('bus messages', () => {
  const frames = telemetryFrame('gw-1', { batteryId: 'main', ts: new Date(0), metrics: { soc: 1 } });

  it('round-trip owner, device and frames; a device without owner stays without', () => {
    expect(decodePayload(encodeMessage('instance-a', { ownerId: 'user-1', deviceId: 'gw-1', frames }), 'instance-b')).toEqual({ ownerId: 'user-1', deviceId: 'gw-1', frames });
    expect(decodePayload(encodeMessage('instance-a', { ownerId: null, deviceId: 'gw-1', frames }), 'instance-b')).toEqual({ ownerId: null, deviceId: 'gw-1', frames });
  });

  it('an instance ignores its own messages and malformed ones', () => {
    expect(decodePayload(encodeMessage('instance-a', { ownerId: 'user-1', deviceId: 'gw-1', frames }), 'instance-a')).toBeNull();
    expect(decodePayload('instance-a\nuser-1', 'instance-b')).toBeNull();
    expect(decodePayload('', 'instance-b')).toBeNull();
    expect(decodePayload('instance-a\nwatching', 'instance-a')).toBeNull();
  });

  it('an announcement names the instance that has streams', () => {
    expect(decodePayload(encodeWatching('instance-a'), 'instance-b')).toEqual({ watching: 'instance-a' });
    expect(decodePayload('instance-a\nwatching?', 'instance-b')).toBeNull();
  });
});

/** Buses of several instances on one in-memory channel: every payload reaches every bus, its sender's too. */
class ChannelBus extends LiveBus {
  constructor(private readonly channel: ChannelBus[]) {
    super();
    channel.push(this);
  }

  protected send(payloads: string[]): Promise<void> {
    for (const bus of this.channel) for (const payload of payloads) bus.received(payload);
    return Promise.resolve();
  }
}

describe('the bus between instances', () => {
  afterEach(() => jest.useRealTimers());

  it('passes messages to the other instances only, and says whether another announced streams within the lease', async () => {
    jest.useFakeTimers({ now: 0 });
    const channel: ChannelBus[] = [];
    const [a, b] = [new ChannelBus(channel), new ChannelBus(channel)];
    const heardByA: TelemetryMessage[] = [];
    const heardByB: TelemetryMessage[] = [];
    a.subscribe((message) => heardByA.push(message));
    b.subscribe((message) => heardByB.push(message));
    expect([a.othersWatching, b.othersWatching]).toEqual([false, false]);

    await b.announce();
    expect([a.othersWatching, b.othersWatching]).toEqual([true, false]);
    const message = { ownerId: 'user-1', deviceId: 'gw-1', frames: 'event: telemetry\ndata: {}\n\n' };
    await a.publish([message]);
    expect(heardByB).toEqual([message]);
    expect(heardByA).toEqual([]);

    jest.setSystemTime(WATCHING_LEASE_MS - 1);
    expect(a.othersWatching).toBe(true);
    jest.setSystemTime(WATCHING_LEASE_MS);
    expect(a.othersWatching).toBe(false);
  });
});
