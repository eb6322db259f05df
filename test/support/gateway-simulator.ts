import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { resolve } from 'node:path';
import type { Summary } from '../../examples/gateway-simulator.js';
import type { Certificate } from './certificates.js';

const root = resolve(import.meta.dirname, '../..');

export interface Finished {
  code: number | null;
  summary: Summary;
  stderr: string;
}

export interface Simulator {
  child: ChildProcess;
  stderr: () => string;
  finished: Promise<Finished>;
}

/**
 * The simulator as a user runs it (`npm run simulate`): Node 24 runs the TypeScript file itself
 * (type stripping), with the firmware server's certificate trusted through NODE_EXTRA_CA_CERTS.
 */
export function startSimulator(args: string[], certificate: Certificate): Simulator {
  const child = spawn(process.execPath, ['examples/gateway-simulator.ts', '--json', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', NODE_EXTRA_CA_CERTS: certificate.certFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const finished = new Promise<Finished>((done, fail) =>
    child.on('exit', (code) => {
      try {
        done({ code, summary: JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Summary, stderr });
      } catch {
        fail(new Error(`the simulator exited with ${code} without a summary:\n${stdout}\n${stderr}`));
      }
    }),
  );
  return { child, stderr: () => stderr, finished };
}

export interface FirmwareServer {
  /** `https://127.0.0.1:<port>` */
  base: string;
  /** The path of every request, in arrival order. */
  downloads: string[];
  close(): Promise<void>;
}

/** An HTTPS server for firmware images, as a CDN would serve them, by path; counts the downloads. */
export async function firmwareServer(certificate: Certificate, images: Record<string, Buffer>): Promise<FirmwareServer> {
  const downloads: string[] = [];
  const server = https.createServer({ cert: certificate.pem, key: readFileSync(certificate.keyFile) }, (request, response) => {
    const image = images[request.url ?? ''];
    downloads.push(request.url ?? '');
    if (!image) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': image.length }).end(image);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const base = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { base, downloads, close: () => new Promise<void>((done) => server.close(() => done())) };
}
