import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions, type Server as TlsServer } from 'node:tls';
import { InvalidEnvironmentError, type Env } from './env.js';

/** Gateways and browsers that cannot do TLS 1.2 are not served. */
export const TLS_MIN_VERSION = 'TLSv1.2';

/** The certificate chain and private key named by TLS_CERT_FILE and TLS_KEY_FILE, as read. */
export interface TlsCredentials {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

export function secureContextOptions(credentials: TlsCredentials): SecureContextOptions {
  return { cert: credentials.cert, key: credentials.key, minVersion: TLS_MIN_VERSION };
}

/**
 * Reads both files and checks that they make a usable pair (PEM, key matching the certificate).
 * Throws an InvalidEnvironmentError naming the variable of each file that cannot be used.
 */
export function readTlsCredentials(certFile: string, keyFile: string): TlsCredentials {
  const problems: string[] = [];
  const read = (name: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      problems.push(`${name}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
      return Buffer.alloc(0);
    }
  };
  const credentials = { certFile, keyFile, cert: read('TLS_CERT_FILE', certFile), key: read('TLS_KEY_FILE', keyFile) };
  if (problems.length === 0) {
    try {
      createSecureContext(secureContextOptions(credentials));
    } catch (error) {
      problems.push(`TLS_CERT_FILE, TLS_KEY_FILE: ${certFile} and ${keyFile} are not a PEM certificate and its private key (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  if (problems.length > 0) throw new InvalidEnvironmentError(problems);
  return credentials;
}

/** The credentials when the environment asks for HTTPS; undefined for plain HTTP. */
export function loadTlsCredentials(env: Env): TlsCredentials | undefined {
  if (!env.TLS_CERT_FILE || !env.TLS_KEY_FILE) return undefined;
  return readTlsCredentials(env.TLS_CERT_FILE, env.TLS_KEY_FILE);
}

/**
 * Reads the files again and puts the new certificate on the listening server: connections made
 * from now on present it, open ones keep theirs. A file that cannot be used throws and leaves the
 * server with the certificate it had.
 */
export function reloadCertificate(server: TlsServer, current: TlsCredentials): TlsCredentials {
  const next = readTlsCredentials(current.certFile, current.keyFile);
  server.setSecureContext(secureContextOptions(next));
  return next;
}
