import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { DEFAULT_CONNECT_TIMEOUT_MS } from './data-source-options.js';

export const CHANGE_CHANNEL = 'device_cloud_changes';

export type ChangeTopic = 'device' | 'config_defaults' | 'firmware_releases' | 'alert_rules' | 'alert_rule_defaults' | 'user' | 'device_shares' | 'device_command' | 'organization_members';
type Listener = (key: string) => void;

/**
 * A change key naming pairs (an account and what changed for it): entries `<a> <b>` joined by
 * commas, each once; `*` ("reread everything") past 7,000 characters, as NOTIFY payloads stop at
 * 8,000 bytes.
 */
export function pairsKey(pairs: ReadonlyArray<readonly [string, string]>): string {
  const key = [...new Set(pairs.map(([a, b]) => `${a} ${b}`))].join(',');
  return key.length > 7000 ? '*' : key;
}

/** The pairs of a key pairsKey made, or `*`. */
export function parsePairs(key: string): Array<[string, string]> | '*' {
  if (key === '*') return '*';
  return key.split(',').flatMap((entry): Array<[string, string]> => {
    const space = entry.indexOf(' ');
    return space > 0 ? [[entry.slice(0, space), entry.slice(space + 1)]] : [];
  });
}
type ChannelListener = (payload: string) => void;

/**
 * Tells in-memory caches that rows they mirror changed, on this instance and on every other one.
 *
 * Triggers (migration ConfigAndOta) send `topic:key` on PostgreSQL's LISTEN/NOTIFY channel when a
 * cached column changes, whoever changed it; this class listens on a dedicated connection. Writers
 * on this instance also call `changed()` after their commit, so a client sees its own change at
 * once, before the notification comes back.
 *
 * Fail-closed: while the listening connection is down, `live` is false and caches must not serve
 * from memory; on reconnect every listener hears `reset` (the `*` key), as changes may have been
 * missed. `epoch` grows with every change heard: a cache loading a row stores it only if the epoch
 * did not move meanwhile, so a load that raced with a change never caches the old row.
 */
@Injectable()
export class ChangeFeed implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ChangeFeed.name);
  private readonly listeners = new Map<ChangeTopic, Set<Listener>>();
  /** Other channels heard on the same connection (the live stream's), by channel name. */
  private readonly channels = new Map<string, ChannelListener>();
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private connected = false;
  /** Said once per outage: the retry every second would otherwise fill the log. */
  private warned = false;
  epoch = 0;

  constructor(
    private readonly url: string,
    private readonly connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  ) {}

  get live(): boolean {
    return this.connected;
  }

  onModuleInit(): Promise<void> {
    return this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(() => undefined);
  }

  subscribe(topic: ChangeTopic, listener: Listener): void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
  }

  /**
   * Hears another LISTEN/NOTIFY channel on this same connection, so a feature that needs
   * notifications costs no connection of its own. Register before the application starts. What
   * is sent while the connection is down is lost; such listeners must tolerate gaps.
   */
  listen(channel: string, listener: ChannelListener): void {
    if (!/^[a-z_]+$/.test(channel) || channel === CHANGE_CHANNEL) throw new Error(`Not a channel name: ${channel}`);
    this.channels.set(channel, listener);
  }

  /** A change committed by this instance: caches here forget it now. */
  changed(topic: ChangeTopic, key = ''): void {
    this.epoch++;
    for (const listener of this.listeners.get(topic) ?? []) listener(key);
  }

  private resetAll(): void {
    this.epoch++;
    for (const set of this.listeners.values()) for (const listener of set) listener('*');
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.url, application_name: 'device-cloud-change-feed', connectionTimeoutMillis: this.connectTimeoutMs, keepAlive: true });
    client.on('notification', (message) => {
      const payload = message.payload ?? '';
      if (message.channel !== CHANGE_CHANNEL) {
        this.channels.get(message.channel)?.(payload);
        return;
      }
      const separator = payload.indexOf(':');
      if (separator > 0) this.changed(payload.slice(0, separator) as ChangeTopic, payload.slice(separator + 1));
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query([CHANGE_CHANNEL, ...this.channels.keys()].map((channel) => `LISTEN ${channel};`).join(' '));
      this.client = client;
      this.resetAll();
      this.connected = true;
      if (this.warned) this.logger.log('Change feed reconnected.');
      this.warned = false;
    } catch {
      if (!this.warned) this.logger.warn('Change feed unavailable; caches are bypassed until it reconnects.');
      this.warned = true;
      await client.end().catch(() => undefined);
      this.scheduleReconnect();
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.connected = false;
    this.resetAll();
    client.end().catch(() => undefined);
    if (!this.stopped) this.logger.warn('Change feed connection lost; caches are bypassed until it reconnects.');
    this.warned = true;
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, 1000);
    this.retryTimer.unref();
  }
}
