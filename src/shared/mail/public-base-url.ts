import type { AddressInfo } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Env } from '../../config/env.js';

/**
 * `scheme://host:port` of a listening server, as a browser on this machine reaches it: a wildcard
 * address (HOST=0.0.0.0) as localhost. Undefined before it listens.
 */
export function listeningUrl(server: unknown): string | undefined {
  const address = (server as { address?: () => AddressInfo | string | null } | undefined)?.address?.();
  if (!address || typeof address === 'string') return undefined;
  // HTTPS is served by an HTTP/2 secure server, a TLS server.
  const scheme = server instanceof TlsServer ? 'https' : 'http';
  const host = ['0.0.0.0', '::'].includes(address.address) ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}`;
}

/** The base of the links in mails. */
@Injectable()
export class PublicBaseUrl {
  constructor(
    private readonly env: Env,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** PUBLIC_BASE_URL without a trailing slash; unset, the address this instance listens on. */
  get(): string {
    if (this.env.PUBLIC_BASE_URL) return this.env.PUBLIC_BASE_URL.replace(/\/$/, '');
    const url = listeningUrl(this.adapterHost.httpAdapter?.getHttpServer());
    // A mail job run before the listener opens fails and is retried, rather than mailing a wrong link.
    if (!url) throw new Error('PUBLIC_BASE_URL is unset and the service does not listen yet');
    return url;
  }
}
