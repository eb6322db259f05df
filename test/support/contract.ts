import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Middleware } from 'openapi-fetch';

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Json & { allOf?: Json[] } }> }>;
}

const document = JSON.parse(readFileSync(join(process.cwd(), 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, Operation>> };

/**
 * Objects are closed for this check: a response member the document does not declare is a
 * mismatch too (a generated client would not know it). The members of an allOf are not: each
 * holds only part of the properties (a problem response narrows `code` and `status` of
 * ProblemResponse, which is closed where it is defined).
 */
function closeObjects(node: unknown, partial = false): void {
  if (Array.isArray(node)) return node.forEach((child) => closeObjects(child, partial));
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  if (!partial && schema.properties && typeof schema.properties === 'object' && schema.additionalProperties === undefined && !schema.allOf && !schema.oneOf && !schema.anyOf) {
    schema.additionalProperties = false;
  }
  for (const [key, child] of Object.entries(schema)) closeObjects(child, key === 'allOf');
}

/** The codes a problem response of the document allows (its allOf narrows ProblemResponse's `code`); undefined when it names none. */
function documentedCodes(schema: (Json & { allOf?: Json[] }) | undefined): string[] | undefined {
  for (const part of schema?.allOf ?? []) {
    const code = (part.properties as Record<string, { enum?: string[] }> | undefined)?.code;
    if (code?.enum) return code.enum;
  }
  return undefined;
}
closeObjects(document);
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

// OpenAPI 3.1 schemas are JSON Schema 2020-12; `example` and friends are annotations ajv need not know.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
(addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
ajv.addSchema(document, 'openapi.json');

const compiled = new Map<string, ValidateFunction>();
const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

function validatorFor(path: string, method: string, status: string, mediaType: string): ValidateFunction {
  const ref = `openapi.json#/${pointer('paths', path, method, 'responses', status, 'content', mediaType, 'schema')}`;
  let validate = compiled.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    compiled.set(ref, validate);
  }
  return validate;
}

export class ContractViolation extends Error {}

/**
 * openapi-fetch middleware: every response the e2e suite receives through the generated client,
 * errors included, must be one the document lists for that operation and status, with a body
 * that matches the documented schema, and a problem document must carry a code the document lists
 * for that operation and status. A mismatch fails the test that made the call.
 */
export const contractCheck: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    const method = request.method.toLowerCase();
    const label = `${request.method} ${schemaPath} → ${response.status}`;
    const operation = document.paths[schemaPath]?.[method];
    if (!operation) throw new ContractViolation(`${label}: the operation is not in openapi.json`);
    const status = String(response.status);
    const statusKey = [status, `${status[0]}XX`, 'default'].find((key) => operation.responses[key]);
    if (!statusKey) throw new ContractViolation(`${label}: openapi.json does not list this status (it lists ${Object.keys(operation.responses).join(', ')})`);
    const content = operation.responses[statusKey].content;
    const text = await response.clone().text();
    if (!content || Object.keys(content).length === 0) {
      if (text.length > 0) throw new ContractViolation(`${label}: the document says no body, the server sent ${text.slice(0, 200)}`);
      return undefined;
    }
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!content[mediaType]) throw new ContractViolation(`${label}: content type ${mediaType || '(none)'} is not documented (${Object.keys(content).join(', ')})`);
    if (!content[mediaType].schema) return undefined;
    let body: unknown;
    // A text answer (text/csv) is its own value: the documented schema is a string schema.
    if (!/[/+]json$/.test(mediaType)) body = text;
    else {
      try {
        body = JSON.parse(text);
      } catch {
        throw new ContractViolation(`${label}: the body is not JSON: ${text.slice(0, 200)}`);
      }
    }
    if (mediaType === 'application/problem+json') {
      const codes = documentedCodes(content[mediaType].schema);
      if (!codes) throw new ContractViolation(`${label}: the document names no problem codes for this status`);
      const code = (body as { code?: unknown } | null)?.code;
      if (typeof code !== 'string' || !codes.includes(code)) {
        throw new ContractViolation(`${label}: problem code ${String(code)} is not one the document lists for this operation and status (${codes.join(', ')})`);
      }
    }
    const validate = validatorFor(schemaPath, method, statusKey, mediaType);
    if (!validate(body)) {
      const errors = (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message}`).join('; ');
      throw new ContractViolation(`${label}: the body does not match its documented schema: ${errors}\n${text.slice(0, 500)}`);
    }
    return undefined;
  },
};
