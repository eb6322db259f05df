import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Certificate {
  certFile: string;
  keyFile: string;
  /** The PEM certificate, as a client's `ca` to trust it. */
  pem: Buffer;
  fingerprint256: string;
}

/**
 * A new self-signed certificate for localhost and 127.0.0.1 (P-256 key, one day), written as
 * `<name>-cert.pem` and `<name>-key.pem` into `dir`. Made by openssl, which Debian and the CI
 * image have, so the tests need no certificate library.
 */
export function selfSignedCertificate(dir: string, name: string): Certificate {
  const certFile = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1']
      .concat(['-subj', `/CN=localhost/O=${name}`, '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile]),
    { stdio: 'pipe' },
  );
  const pem = readFileSync(certFile);
  return { certFile, keyFile, pem, fingerprint256: new X509Certificate(pem).fingerprint256 };
}
