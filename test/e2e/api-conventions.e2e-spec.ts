import { ShutdownState } from '../../src/health/shutdown-state.js';
import { aLegacyRegistration, aRegistration, bearer, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { tableCounts } from '../support/database-state.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

const BODY_LIMIT_BYTES = 256 * 1024;

interface OpenApiSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, OpenApiSchema>;
  items?: OpenApiSchema;
  allOf?: OpenApiSchema[];
  anyOf?: OpenApiSchema[];
  oneOf?: OpenApiSchema[];
  example?: unknown;
  examples?: unknown;
  enum?: unknown[];
  default?: unknown;
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  requestBody?: { content?: Record<string, { schema?: OpenApiSchema }> };
  responses?: Record<string, { content?: Record<string, { schema?: OpenApiSchema }> }>;
}

describe('API conventions', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /** A registration whose body is sent exactly as given, past the typed client's serializer. */
  const registerRaw = (raw: string, contentType = 'application/json') =>
    t.api.POST('/api/v1/device/register', { body: {} as never, bodySerializer: () => raw, headers: { 'content-type': contentType } });

  /** Runs a request that must be refused, and checks that it wrote nothing. */
  async function withoutWrites<T>(request: () => Promise<T>): Promise<T> {
    const before = await tableCounts(t.db);
    const result = await request();
    expect(await tableCounts(t.db)).toEqual(before);
    return result;
  }

  describe('request bodies', () => {
    it('malformed JSON: 400 MALFORMED_BODY', async () => {
      const result = await withoutWrites(() => registerRaw('{"deviceId": "gw-1",'));

      expectProblem(result, 400, 'MALFORMED_BODY');
    });

    it.each([
      ['__proto__', '{"__proto__":{"a":1}}'],
      ['constructor.prototype', '{"constructor":{"prototype":{"a":1}}}'],
    ])('a %s key: 400 problem', async (_name, raw) => {
      const result = await withoutWrites(() => registerRaw(raw));

      expectProblem(result, 400);
    });

    it.each([
      ['hardwareId', { hardwareId: 'hw\u0000x' }],
      ['deviceId', { deviceId: 'gw\u0000x' }],
    ])('a NUL character in %s: 400 VALIDATION_FAILED naming the field', async (field, override) => {
      const raw = JSON.stringify(aRegistration(override));
      expect(raw).toContain('\\u0000');

      const problem = expectProblem(await withoutWrites(() => registerRaw(raw)), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    it.each([
      ['hardwareId', { hardwareId: 'hw\ud800x' }],
      ['deviceId', { deviceId: 'gw\udc00' }],
    ])('half a surrogate pair in %s: 400 VALIDATION_FAILED naming the field', async (field, override) => {
      const raw = JSON.stringify(aRegistration(override));
      expect(raw).toMatch(/\\ud[89a-f][0-9a-f]{2}/);

      const problem = expectProblem(await withoutWrites(() => registerRaw(raw)), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    it('half a surrogate pair as the e-mail of a signup: 400 VALIDATION_FAILED (the e-mail check threw on it: 500)', async () => {
      const raw = '{"email":"\\ud800","password":"correct horse battery"}';
      const result = await withoutWrites(() => t.api.POST('/api/v1/auth/signup', { body: {} as never, bodySerializer: () => raw, headers: { 'content-type': 'application/json' } }));

      expect(fieldsOf(expectProblem(result, 400, 'VALIDATION_FAILED'))).toContain('email');
    });

    it.each([
      ['text/plain', JSON.stringify(aRegistration())],
      ['application/x-www-form-urlencoded', new URLSearchParams({ ...aRegistration() } as Record<string, string>).toString()],
    ])('a %s body: 415 UNSUPPORTED_MEDIA_TYPE', async (contentType, raw) => {
      const result = await withoutWrites(() => registerRaw(raw, contentType));

      expectProblem(result, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    /*
     * The unauthenticated auth routes (register among them) take 4 KiB at most
     * (device-rate-limits.e2e-spec.ts); the default limit is shown on a route that keeps it: a
     * device setting its claim code, with a body of exactly `bytes` bytes, its claimCode padded out.
     */
    const claimCodeBodyOfSize = (bytes: number) => {
      const bare = JSON.stringify({ claimCode: '' });
      return JSON.stringify({ claimCode: 'C'.repeat(bytes - bare.length) });
    };
    const setClaimCodeRaw = async (raw: string) => {
      const device = await registerDevice(t.api, aLegacyRegistration());
      return withoutWrites(() =>
        t.api.PUT('/api/v1/device/claim-code', { body: {} as never, bodySerializer: () => raw, headers: { 'content-type': 'application/json', ...bearer(device.accessToken) } }),
      );
    };

    it('a body one byte over 256 KiB: 413 PAYLOAD_TOO_LARGE', async () => {
      const raw = claimCodeBodyOfSize(BODY_LIMIT_BYTES + 1);
      expect(Buffer.byteLength(raw)).toBe(BODY_LIMIT_BYTES + 1);

      expectProblem(await setClaimCodeRaw(raw), 413, 'PAYLOAD_TOO_LARGE');
    });

    it('a body of exactly 256 KiB is read (and refused only for its too long claimCode)', async () => {
      const raw = claimCodeBodyOfSize(BODY_LIMIT_BYTES);
      expect(Buffer.byteLength(raw)).toBe(BODY_LIMIT_BYTES);

      const problem = expectProblem(await setClaimCodeRaw(raw), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain('claimCode');
    });

    it.each([
      ['an empty JSON array', '[]'],
      ['a JSON array holding a valid registration', JSON.stringify([aRegistration()])],
      ['JSON null', 'null'],
      ['a JSON number', '42'],
      ['a JSON string', '"gw-1"'],
    ])('%s as the body: 400 problem', async (_name, raw) => {
      const result = await withoutWrites(() => registerRaw(raw));

      expectProblem(result, 400);
    });
  });

  describe('problem documents', () => {
    it('an unknown route: 404 NOT_FOUND naming the path', async () => {
      // Plain fetch: the route is not in the document, so the generated client has no operation for it.
      const response = await fetch(`${t.baseUrl}/api/v1/no-such-route`);
      const problem = expectProblem({ response, error: await response.json() }, 404, 'NOT_FOUND');

      expect(problem.instance).toBe('/api/v1/no-such-route');
    });

    it('carry a distinct request id per request, echoed in X-Request-Id', async () => {
      const first = expectProblem(await registerRaw('{'), 400, 'MALFORMED_BODY');
      const second = expectProblem(await registerRaw('{'), 400, 'MALFORMED_BODY');

      expect(first.requestId).not.toBe(second.requestId);
    });

    it('name the request path as instance, without the query string', async () => {
      const problem = expectProblem(await t.api.POST('/api/v1/device/login', { body: {} as never, params: { query: { x: 'secret' } } as never }), 400);

      expect(problem.instance).toBe('/api/v1/device/login');
    });
  });

  describe('health', () => {
    it('GET /health/live: 200', async () => {
      const { data, response } = await t.api.GET('/health/live');

      expect(response.status).toBe(200);
      expect(data?.status).toBe('ok');
    });

    it('GET /health/ready: 200 with the database up', async () => {
      const { data, response } = await t.api.GET('/health/ready');

      expect(response.status).toBe(200);
      expect(data?.status).toBe('ok');
      expect(data?.details?.database?.status).toBe('up');
    });
  });

  describe('readiness during shutdown', () => {
    let stopping: TestApp;

    beforeAll(async () => {
      stopping = await createTestApp();
    });
    afterAll(async () => {
      await stopping.close();
    });

    it('GET /health/ready: 503 once shutdown has begun, while /health/live stays 200', async () => {
      stopping.app.get(ShutdownState).beginShutdown();

      expect((await stopping.api.GET('/health/ready')).response.status).toBe(503);
      expect((await stopping.api.GET('/health/live')).response.status).toBe(200);
    });
  });

  describe('documentation', () => {
    it('GET /docs: 200 HTML', async () => {
      const response = await fetch(`${t.baseUrl}/docs`);

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await response.text()).toMatch(/<html/i);
    });

    describe('GET /docs/openapi.json', () => {
      let document: { openapi: string; paths: Record<string, Record<string, OpenApiOperation>>; components: { schemas: Record<string, OpenApiSchema> } };
      let operations: Array<[string, OpenApiOperation]>;

      beforeAll(async () => {
        const response = await fetch(`${t.baseUrl}/docs/openapi.json`);
        expect(response.status).toBe(200);
        document = (await response.json()) as typeof document;
        operations = Object.entries(document.paths).flatMap(([path, item]) =>
          Object.entries(item).map(([method, operation]): [string, OpenApiOperation] => [`${method.toUpperCase()} ${path}`, operation]),
        );
      });

      it('is OpenAPI 3.1.0 and documents the device routes', () => {
        expect(document.openapi).toBe('3.1.0');
        expect(operations.map(([name]) => name)).toEqual(
          expect.arrayContaining([
            'POST /api/v1/device/register',
            'POST /api/v1/device/login',
            'POST /api/v1/device/token/refresh',
            'GET /api/v1/device/me',
          ]),
        );
      });

      it('gives every operation an operationId and tags', () => {
        const incomplete = operations.filter(([, operation]) => !operation.operationId || !operation.tags?.length).map(([name]) => name);

        expect(incomplete).toEqual([]);
      });

      it('gives every operation a summary', () => {
        const unsummarized = operations.filter(([, operation]) => !operation.summary?.trim()).map(([name]) => name);

        expect(unsummarized).toEqual([]);
      });

      /**
       * `Schema.property` for every property reachable from `schema` without an example, enum or default.
       * A property that is just a $ref (or an array of them) is covered by the referenced schema's own properties;
       * any other object-valued property (nullable or described $ref, inline object) needs an example object of its own.
       */
      function propertiesWithoutExample(schema: OpenApiSchema, where = '(inline)', seen = new Set<string>()): string[] {
        if (schema.$ref) {
          const name = schema.$ref.split('/').pop()!;
          if (seen.has(name)) return [];
          seen.add(name);
          return propertiesWithoutExample(document.components.schemas[name], name, seen);
        }
        const nested = [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.items ? [schema.items] : [])];
        return [
          ...nested.flatMap((inner) => propertiesWithoutExample(inner, where, seen)),
          ...Object.entries(schema.properties ?? {}).flatMap(([property, inner]) => {
            const coveredByReference = inner.$ref !== undefined || (inner.type === 'array' && inner.items?.$ref !== undefined);
            const documented = ['example', 'examples', 'enum', 'default'].some((keyword) => keyword in inner);
            return [...(coveredByReference || documented ? [] : [`${where}.${property}`]), ...propertiesWithoutExample(inner, where, seen)];
          }),
        ];
      }

      it('gives every property of every request body and 2xx response an example (or an enum or default)', () => {
        const bodies = operations.flatMap(([name, operation]) => [
          ...Object.values(operation.requestBody?.content ?? {}).map((media): [string, OpenApiSchema | undefined] => [`${name} request`, media.schema]),
          ...Object.entries(operation.responses ?? {})
            .filter(([status]) => status.startsWith('2'))
            .flatMap(([status, response]) => Object.values(response.content ?? {}).map((media): [string, OpenApiSchema | undefined] => [`${name} ${status}`, media.schema])),
        ]);
        expect(bodies.length).toBeGreaterThan(0);

        const undocumented = bodies.flatMap(([body, schema]) => (schema ? propertiesWithoutExample(schema).map((property) => `${body}: ${property}`) : []));

        expect(undocumented).toEqual([]);
      });

      it('documents every error response as application/problem+json (304 Not Modified has no body by definition)', () => {
        const offending = operations.flatMap(([name, operation]) =>
          Object.entries(operation.responses ?? {})
            .filter(([status, response]) => status !== '304' && !status.startsWith('2') && !Object.keys(response.content ?? {}).includes('application/problem+json'))
            .map(([status, response]) => `${name} ${status}: ${Object.keys(response.content ?? {}).join(', ') || 'no content'}`),
        );

        expect(offending).toEqual([]);
      });
    });
  });
});
