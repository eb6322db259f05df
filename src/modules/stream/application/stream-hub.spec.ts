import { jest } from '@jest/globals';
import { loadEnv } from '../../../config/env.js';
import type { ShutdownState } from '../../../health/shutdown-state.js';
import { HEARTBEAT, OPENING } from '../domain/sse.js';
import { StreamHub, TooManyStreamsError } from './stream-hub.js';
import type { StreamSink } from './stream-subscriber.js';

const settings = { NODE_ENV: 'test', STREAM_MAX_PER_USER: '2', STREAM_MAX_BUFFERED_BYTES: '4096', STREAM_HEARTBEAT_MS: '300000', STREAM_COALESCE_MS: '0' };
const env = loadEnv(settings);

/** A connection whose client takes what was written when `text()` reads it. */
class MemorySink implements StreamSink {
  unread = '';
  ended = false;
  destroyed = false;
  private readonly listeners: Array<() => void> = [];
  get backlog(): number {
    return this.unread.length;
  }
  write(text: string): void {
    if (!this.ended && !this.destroyed) this.unread += text;
  }
  end(): void {
    this.ended = true;
    this.listeners.forEach((listener) => listener());
  }
  destroy(): void {
    this.destroyed = true;
    this.listeners.forEach((listener) => listener());
  }
  onClose(listener: () => void): void {
    this.listeners.push(listener);
  }
}

function setUp(shuttingDown = false, coalesceMs = 0) {
  const hub = new StreamHub(coalesceMs === 0 ? env : loadEnv({ ...settings, STREAM_COALESCE_MS: String(coalesceMs) }), { shuttingDown } as ShutdownState);
  const open = (userId: string, isAdmin = false, deviceId: string | null = null, resuming = false) => {
    const out = new MemorySink();
    const subscriber = hub.open({ userId, isAdmin }, deviceId, out, resuming);
    const text = () => {
      const all = out.unread;
      out.unread = '';
      return all.replace(OPENING, '');
    };
    return { out, subscriber, text };
  };
  return { hub, open };
}

describe('StreamHub', () => {
  afterEach(() => jest.useRealTimers());

  it('hands a frame to the streams of a device’s sharees only while the frame’s owner granted the share, until the share is dropped', () => {
    const { hub, open } = setUp();
    const carol = open('carol');
    const carolNarrowed = open('carol', false, 'gw-9');
    const stranger = open('dave');
    hub.setShares('carol', new Map([['gw-1', 'alice']]));
    hub.deliver('alice', 'gw-1', 'f1\n');
    hub.deliver('bob', 'gw-1', 'other-owner\n');
    hub.deliver('alice', 'gw-2', 'not-shared\n');
    expect([carol.text(), carolNarrowed.text(), stranger.text()]).toEqual(['f1\n', '', '']);

    hub.dropShare('carol', 'gw-1');
    hub.deliver('alice', 'gw-1', 'f2\n');
    expect(carol.text()).toBe('');
    hub.setShares('carol', new Map([['gw-1', 'alice']]));
    carol.out.end();
    hub.deliver('alice', 'gw-1', 'f3\n');
    expect(carol.text()).toBe('');
  });

  it('hands a frame to the owner’s streams and the administrators’, once each, narrowed by device', () => {
    const { hub, open } = setUp();
    const alice = open('alice');
    const aliceOne = open('alice', false, 'gw-2');
    const bob = open('bob');
    const admin = open('root', true);
    const adminAlsoOwner = open('alice-admin', true);

    hub.deliver('alice', 'gw-1', 'F1');
    hub.deliver(null, 'gw-3', 'F3');
    hub.deliver('alice-admin', 'gw-4', 'F4');

    expect(alice.text()).toBe('F1');
    expect(aliceOne.text()).toBe('');
    expect(bob.text()).toBe('');
    expect(admin.text()).toBe('F1F3F4');
    expect(adminAlsoOwner.text()).toBe('F1F3F4');
  });

  it('refuses a stream past the account’s cap, and while shutting down', () => {
    const { open } = setUp();
    open('alice');
    open('alice');
    expect(() => open('alice')).toThrow(TooManyStreamsError);
    expect(() => open('bob')).not.toThrow();
    expect(() => setUp(true).open('alice')).toThrow(expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }));
  });

  it('a resumed stream gets the replay first, then what came meanwhile, without the events the replay had', () => {
    const { hub, open } = setUp();
    const stream = open('alice', false, null, true);
    hub.deliver('alice', 'gw-1', 'T1');
    hub.deliver('alice', 'gw-1', 'E5', 'evt_5');
    hub.deliver('alice', 'gw-1', 'E6', 'evt_6');
    expect(stream.text()).toBe('');

    stream.subscriber.resume([
      { frame: 'E4', eventId: 'evt_4' },
      { frame: 'E5', eventId: 'evt_5' },
    ]);
    hub.deliver('alice', 'gw-1', 'T2');
    expect(stream.text()).toBe('E4E5T1E6T2');
  });

  it('drops a stream whose backlog stays above the bound for over a second, or passes 16 times it, and frees its place', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { hub, open } = setUp();
    const slow = open('alice');
    const reader = open('alice');
    const frame = 'x'.repeat(3000);
    hub.deliver('alice', 'gw-1', frame);
    hub.deliver('alice', 'gw-1', frame); // 6000 waiting: over the bound, within the second
    reader.text();
    expect(slow.out.destroyed).toBe(false);
    jest.advanceTimersByTime(1001);
    hub.deliver('alice', 'gw-1', frame);
    expect(slow.out.destroyed).toBe(true);
    expect(reader.out.destroyed).toBe(false);
    expect(hub.size).toBe(1);

    const flooded = open('alice');
    hub.deliver('alice', 'gw-1', 'y'.repeat(16 * 4096 + 1));
    expect(flooded.out.destroyed).toBe(true);
  });

  it('a backlog that drains in time is not dropped', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { hub, open } = setUp();
    const reader = open('alice');
    hub.deliver('alice', 'gw-1', 'x'.repeat(6000));
    jest.advanceTimersByTime(900);
    reader.text();
    jest.advanceTimersByTime(900);
    hub.deliver('alice', 'gw-1', 'x'.repeat(100));
    expect(reader.out.destroyed).toBe(false);
    expect(reader.text()).toBe('x'.repeat(100));
  });

  it('ends every stream when the module is destroyed, and opens none after', () => {
    const { hub, open } = setUp();
    const one = open('alice');
    hub.deliver('alice', 'gw-1', 'F1');
    hub.onModuleDestroy();
    expect(one.out.ended).toBe(true);
    expect(one.text()).toBe('F1');
    expect(hub.size).toBe(0);
    expect(() => open('bob')).toThrow(expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }));
  });

  it('sends every stream a heartbeat comment', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { open } = setUp();
    const one = open('alice');
    jest.advanceTimersByTime(env.STREAM_HEARTBEAT_MS);
    expect(one.text()).toBe(HEARTBEAT);
  });

  it('with a coalescing window, a heartbeat leaves a quiet stream quiet: the next frame goes out at once', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { hub, open } = setUp(false, 250);
    const one = open('alice');
    jest.advanceTimersByTime(env.STREAM_HEARTBEAT_MS);
    hub.deliver('alice', 'gw-1', 'A1');
    expect(one.text()).toBe(HEARTBEAT + 'A1');
  });

  it('with a coalescing window, a stream’s frames go out together at the end of the window, in order, and before it ends', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { hub, open } = setUp(false, 250);
    const alice = open('alice');
    const bob = open('bob');
    hub.deliver('alice', 'gw-1', 'A0');
    hub.deliver('bob', 'gw-2', 'B0');
    expect([alice.text(), bob.text()]).toEqual(['A0', 'B0']); // quiet streams: at once
    hub.deliver('alice', 'gw-1', 'A1');
    jest.advanceTimersByTime(100);
    hub.deliver('alice', 'gw-1', 'A2');
    hub.deliver('bob', 'gw-2', 'B1');
    expect(alice.text()).toBe('');
    jest.advanceTimersByTime(150);
    expect(alice.text()).toBe('A1A2');
    expect(bob.text()).toBe('B1');

    hub.deliver('alice', 'gw-1', 'A3');
    hub.deliver('alice', 'gw-1', 'F'.repeat(5000)); // past the bound: the window goes out at once
    expect(alice.text()).toBe('A3' + 'F'.repeat(5000));

    hub.deliver('alice', 'gw-1', 'A4');
    hub.onModuleDestroy();
    expect(alice.text()).toBe('A4');
  });

  it('with a coalescing window, a frame to a stream that wrote nothing for a window goes out at once; the next ones wait for the window', () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'setImmediate'] });
    const { hub, open } = setUp(false, 250);
    const alice = open('alice');
    // The opening comment leaves the stream quiet: its first frame goes out at once.
    hub.deliver('alice', 'gw-1', 'A0');
    expect(alice.text()).toBe('A0');
    jest.advanceTimersByTime(250);

    hub.deliver('alice', 'gw-1', 'A1');
    expect(alice.text()).toBe('A1');
    jest.advanceTimersByTime(100);
    hub.deliver('alice', 'gw-1', 'A2');
    hub.deliver('alice', 'gw-1', 'A3');
    expect(alice.text()).toBe('');
    jest.advanceTimersByTime(249);
    expect(alice.text()).toBe('');
    jest.advanceTimersByTime(1);
    expect(alice.text()).toBe('A2A3');

    // Written just now: the next frame waits for a window again.
    hub.deliver('alice', 'gw-1', 'A4');
    expect(alice.text()).toBe('');
    jest.advanceTimersByTime(250);
    expect(alice.text()).toBe('A4');
    jest.advanceTimersByTime(250);
    hub.deliver('alice', 'gw-1', 'A5');
    expect(alice.text()).toBe('A5');
  });
});
