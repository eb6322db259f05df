import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { API_PREFIX, buildOpenApiDocument, createAdapter, openApiPrefixExclusions } from './configure-app.js';
import { loadEnv } from './config/env.js';
import { Secrets } from './config/secrets.js';

/**
 * Writes the OpenAPI document from the code alone: the application is built in preview mode, so
 * no provider runs and no database is needed. `npm run openapi` → openapi.json.
 */
async function writeOpenApi(path: string): Promise<void> {
  const env = loadEnv({ NODE_ENV: 'development', LOG_LEVEL: 'silent' });
  const unused = 'x'.repeat(32);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register({ env, secrets: new Secrets(unused, unused, unused), databaseUrl: 'postgres://unused@127.0.0.1/unused' }),
    createAdapter(env),
    { preview: true, logger: false, abortOnError: false },
  );
  app.setGlobalPrefix(API_PREFIX, { exclude: openApiPrefixExclusions });
  writeFileSync(path, JSON.stringify(buildOpenApiDocument(app), null, 2) + '\n');
  await app.close();
}

writeOpenApi(process.argv[2] ?? 'openapi.json').catch((error: unknown) => {
  process.stderr.write(`Could not write the OpenAPI document: ${String(error)}\n`);
  process.exit(1);
});
