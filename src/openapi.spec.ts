import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROBLEM_CODES } from './shared/problem-types.js';

/*
 * The committed openapi.json is what frontends generate their clients from (CI keeps it in step
 * with the code): these are the promises it must keep for them.
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
}
interface MediaType {
  schema?: Schema;
  examples?: Record<string, { $ref?: string }>;
}
interface Response {
  headers?: Record<string, { required?: boolean; schema?: Schema }>;
  content?: Record<string, MediaType>;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  operationId: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, MediaType> };
  responses: Record<string, Response>;
  security?: Record<string, string[]>[];
  'x-api-key-scope'?: string;
}
interface Document {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; examples?: Record<string, { value?: { code?: string; status?: number } }> };
}

const document = JSON.parse(readFileSync(join(process.cwd(), 'openapi.json'), 'utf8')) as Document;
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path} (${operation.operationId})`, method, operation })),
);
const resolve = (schema: Schema): Schema => (schema.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()!]) : schema);
const problemResponses = operations.flatMap(({ name, operation }) =>
  Object.entries(operation.responses)
    .filter(([, response]) => response.content?.['application/problem+json'])
    .map(([status, response]) => ({ name: `${name} ${status}`, status: Number(status), response, media: response.content!['application/problem+json'] })),
);
const codesOf = (media: MediaType): string[] | undefined => media.schema?.allOf?.map((part) => part.properties?.code?.enum as string[] | undefined).find(Boolean);

describe('openapi.json', () => {
  describe('problem codes', () => {
    it('names every code of src/shared/problem-types.ts, and only those, in the ProblemCode enum of ProblemResponse.code', () => {
      expect(document.components.schemas.ProblemCode.enum).toEqual(PROBLEM_CODES);
      expect(JSON.stringify(document.components.schemas.ProblemResponse.properties!.code)).toContain('#/components/schemas/ProblemCode');
    });

    it('lists the codes of every error response of every operation, each a real code', () => {
      expect(problemResponses.length).toBeGreaterThan(100);
      const unlisted = problemResponses.filter(({ media }) => !codesOf(media)?.length).map(({ name }) => name);
      const unknown = problemResponses.flatMap(({ name, media }) => (codesOf(media) ?? []).filter((code) => !(PROBLEM_CODES as string[]).includes(code)).map((code) => `${name}: ${code}`));

      expect(unlisted).toEqual([]);
      expect(unknown).toEqual([]);
    });

    it('gives every listed code an example problem document of that code and status', () => {
      const wrong = problemResponses.flatMap(({ name, status, media }) =>
        (codesOf(media) ?? []).flatMap((code) => {
          const ref = media.examples?.[code]?.$ref;
          const example = ref ? document.components.examples?.[ref.split('/').pop()!] : undefined;
          return example?.value?.code === code && example.value.status === status ? [] : [`${name}: ${code}`];
        }),
      );

      expect(wrong).toEqual([]);
    });

    it('declares Retry-After on every 429 and 503', () => {
      const without = problemResponses.filter(({ status, response }) => (status === 429 || status === 503) && !response.headers?.['Retry-After']?.required).map(({ name }) => name);

      expect(problemResponses.some(({ status }) => status === 429)).toBe(true);
      expect(without).toEqual([]);
    });
  });

  it('declares ETag on the answers of every operation that takes If-Match, and of the read it comes from', () => {
    const conditional = operations.filter(({ operation }) => operation.parameters?.some((parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === 'if-match'));
    const reads = conditional.map(({ name }) => operations.find((other) => other.method === 'get' && name.split(' ')[1] === other.name.split(' ')[1])!);
    const without = [...conditional, ...reads].filter(({ operation }) => !operation.responses['200']?.headers?.ETag).map(({ name }) => name);

    expect(conditional.map(({ operation }) => operation.operationId).sort()).toEqual(['updateConfigDefaults', 'updateDashboardDeviceConfig']);
    expect(without).toEqual([]);
  });

  it('describes every tag an operation carries', () => {
    const described = new Map((document.tags ?? []).map((tag) => [tag.name, tag.description?.trim() ?? '']));
    const used = new Set(operations.flatMap(({ operation }) => operation.tags ?? []));

    expect([...used].filter((tag) => !described.get(tag))).toEqual([]);
    expect([...described.keys()].filter((tag) => !used.has(tag))).toEqual([]);
  });

  describe('parameters', () => {
    const query = operations.flatMap(({ name, operation }) => (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => ({ name, parameter })));
    const named = (parameterName: string) => query.filter(({ parameter }) => parameter.name === parameterName);

    it('types every limit as an integer with bounds, every cursor as a string, every from and to as a date-time', () => {
      const wrong = [
        ...named('limit').filter(({ parameter: { schema } }) => schema?.type !== 'integer' || schema.minimum !== 1 || typeof schema.maximum !== 'number'),
        ...named('cursor').filter(({ parameter: { schema } }) => schema?.type !== 'string'),
        ...[...named('from'), ...named('to')].filter(({ parameter: { schema } }) => schema?.type !== 'string' || schema.format !== 'date-time'),
      ].map(({ name, parameter }) => `${name}: ${parameter.name}`);

      expect(named('limit').length).toBeGreaterThan(5);
      expect(wrong).toEqual([]);
    });

    it('gives bucket its values: auto, raw, or a number of seconds', () => {
      const [bucket] = named('bucket');

      expect(bucket.parameter.schema?.anyOf).toEqual(expect.arrayContaining([expect.objectContaining({ enum: ['auto', 'raw'] }), expect.objectContaining({ pattern: expect.any(String) })]));
    });
  });

  it('pages every list the same way: limit and cursor in, items and nextCursor out', () => {
    // At most MAX_WEBHOOKS_PER_USER (10) webhooks per account or organization: one page always
    // holds them all. A device's batteries are the handful one gateway reports (the shape is {items}).
    const unpaged = new Set(['listWebhooks', 'listOrganizationWebhooks', 'listBatteries']);
    const lists = operations.filter(({ method, operation }) => {
      const schema = operation.responses['200']?.content?.['application/json']?.schema;
      return method === 'get' && schema !== undefined && resolve(schema).properties?.items !== undefined;
    });
    const different = lists
      .filter(({ operation }) => !unpaged.has(operation.operationId))
      .filter(({ operation }) => {
        const names = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
        const response = resolve(operation.responses['200'].content!['application/json'].schema!);
        return !names.includes('limit') || !names.includes('cursor') || !response.properties?.nextCursor || !response.required?.includes('nextCursor');
      })
      .map(({ name }) => name);

    expect(lists.map(({ operation }) => operation.operationId)).toEqual(expect.arrayContaining(['listMyDevices', 'listDashboardDevices', 'listAlerts', 'listEvents']));
    expect(different).toEqual([]);
  });

  /**
   * openapi-typescript makes a property with a default required in the generated types unless it
   * runs with --default-non-nullable false; a required one is required either way. A request
   * property the service defaults must stay optional, or clients must send what they may leave out.
   */
  it('lists no request property or parameter that has a default as required', () => {
    const found: string[] = [];
    const seen = new Set<Schema>();
    const visit = (schema: Schema | undefined, where: string): void => {
      if (!schema || seen.has(schema)) return;
      seen.add(schema);
      if (schema.$ref) return visit(resolve(schema), schema.$ref.split('/').pop()!);
      for (const [property, child] of Object.entries(schema.properties ?? {})) {
        if (schema.required?.includes(property) && resolve(child).default !== undefined) found.push(`${where}.${property}`);
        visit(child, where);
      }
      for (const child of [schema.items, ...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) visit(child, where);
      if (typeof schema.additionalProperties === 'object') visit(schema.additionalProperties, where);
    };
    for (const { name, operation } of operations) {
      for (const media of Object.values(operation.requestBody?.content ?? {})) visit(media.schema, `${name} body`);
      for (const parameter of operation.parameters ?? []) if (parameter.required && parameter.schema?.default !== undefined) found.push(`${name} ${parameter.in} ${parameter.name}`);
    }

    expect(seen.size).toBeGreaterThan(20);
    expect(found).toEqual([]);
  });

  describe('API keys', () => {
    const takesKeys = operations.filter(({ operation }) => operation.security?.some((requirement) => 'apiKey' in requirement));
    const refusesKeys = (codes: string[] | undefined) => codes?.includes('API_KEY_SCOPE') ?? false;
    const codes403 = (operation: Operation) => {
      const media = operation.responses['403']?.content?.['application/problem+json'];
      return media && codesOf(media);
    };

    it('lists the apiKey scheme exactly on the operations with x-api-key-scope, a read scope on GETs only', () => {
      const scoped = operations.filter(({ operation }) => operation['x-api-key-scope'] !== undefined);

      expect(takesKeys.map(({ name }) => name)).toEqual(scoped.map(({ name }) => name));
      expect(takesKeys.length).toBeGreaterThan(5);
      expect(takesKeys.filter(({ method, operation }) => operation['x-api-key-scope'] === 'read' && method !== 'get').map(({ name }) => name)).toEqual([]);
      expect(takesKeys.filter(({ operation }) => !['read', 'write'].includes(operation['x-api-key-scope']!)).map(({ name }) => name)).toEqual([]);
    });

    it('never on account, key, webhook or admin operations', () => {
      const off = takesKeys.filter(({ name }) => / \/api\/v1\/(users|auth|admin|user\/api-keys|user\/webhooks)\b/.test(name));

      expect(off.map(({ name }) => name)).toEqual([]);
    });

    it('documents 403 API_KEY_SCOPE on every customer operation a key may be refused by, and not on those that take any key', () => {
      const customer = operations.filter(({ operation }) => operation.security?.some((requirement) => 'customer' in requirement));
      const wrong = customer.filter(({ operation }) => refusesKeys(codes403(operation)) === (operation['x-api-key-scope'] === 'read'));

      expect(wrong.map(({ name }) => name)).toEqual([]);
    });
  });
});
