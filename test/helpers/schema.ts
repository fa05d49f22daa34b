/**
 * AOS JSON-Schema validation for tests (ajv, draft-07, strict off).
 *
 * Source: /work/shared/spec/aos/specification/AOS/aos_schema.json, falling back to the
 * verbatim copy in test/fixtures/aos_schema.json.
 *
 * The published schema has quirks that make it unusable as-is; they are repaired in memory
 * (see SCHEMA_PATCHES, which lists what was actually changed):
 *  1. In every A2A* definition (and MCPMessage) the object-level `required`, `title`, `type`
 *     (and `description`) sit INSIDE `properties`, as if they were property names; likewise
 *     `params.properties.required`. Non-schema values inside `properties` are hoisted to the
 *     parent object, so `required: [method, params, id]` and `params.required: [payload, context]`
 *     take effect.
 *  2. `A2APartialAgentDetails` nests `url/name/version` under a bogus `agent` key; they are
 *     hoisted and made required (spec §3.16.3 marks all three required).
 *  3. `A2AContext.from/to` is a `oneOf` of Full/Partial context. Partial accepts any object,
 *     so a correct full Agent matches BOTH and `oneOf` fails. It becomes `anyOf`; the full
 *     side is checked separately against `Agent` (validateAgent). `from`, `to`, `agent`,
 *     `role` are required (spec §3.16).
 *  4. Method constants disagree with the spec text / A2A v0.3: `task/get`,
 *     `task/pushNotificationConfig/set|get` are replaced by `tasks/get`,
 *     `tasks/pushNotificationConfig/set|get` (spec §4.8.2).
 *  5. `PingRequest` requires `timestamp` at the top level instead of in `params`; moved.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';

export const SHARED_SCHEMA_PATH = path.resolve(__dirname, '../../../shared/spec/aos/specification/AOS/aos_schema.json');
export const FIXTURE_SCHEMA_PATH = path.resolve(__dirname, '../fixtures/aos_schema.json');
/** Directory of the AOS seed hook examples (may be absent outside the dev workspace). */
export const SEEDS_DIR = path.resolve(__dirname, '../../../shared/spec/seeds');

/** AOS method (v0.3-style name) -> $defs entry. */
export const AOS_METHOD_DEFS: Readonly<Record<string, string>> = {
  'message/send': 'A2AMessageSend',
  'message/stream': 'A2AMessageStream',
  'tasks/cancel': 'A2ATasksCancel',
  'tasks/resubscribe': 'A2ATasksResubscribe',
  'tasks/get': 'A2ATaskGet',
  'tasks/pushNotificationConfig/set': 'A2ATaskPushNotificationConfigSet',
  'tasks/pushNotificationConfig/get': 'A2ATaskPushNotificationConfigGet',
};

/** Schema method constants that differ from the spec text. */
const METHOD_CONST_FIXES: Readonly<Record<string, string>> = {
  A2ATaskGet: 'tasks/get',
  A2ATaskPushNotificationConfigSet: 'tasks/pushNotificationConfig/set',
  A2ATaskPushNotificationConfigGet: 'tasks/pushNotificationConfig/get',
};

/** Human-readable list of the repairs applied to the loaded schema. */
export const SCHEMA_PATCHES: string[] = [];

type Json = any;

function loadRawSchema(): { schema: Json; from: string } {
  for (const p of [SHARED_SCHEMA_PATH, FIXTURE_SCHEMA_PATH]) {
    if (fs.existsSync(p)) return { schema: JSON.parse(fs.readFileSync(p, 'utf8')), from: p };
  }
  throw new Error(`AOS schema not found at ${SHARED_SCHEMA_PATH} or ${FIXTURE_SCHEMA_PATH}`);
}

/** Hoist non-schema entries of every `properties` map to the owning object (quirk 1). */
function hoistMisplaced(node: Json, where: string): void {
  if (Array.isArray(node)) {
    node.forEach((n, i) => hoistMisplaced(n, `${where}/${i}`));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const props = node.properties;
  if (props && typeof props === 'object' && !Array.isArray(props)) {
    for (const [k, v] of Object.entries(props)) {
      const isSchema = (typeof v === 'object' && v !== null && !Array.isArray(v)) || typeof v === 'boolean';
      if (!isSchema) {
        delete props[k];
        if (!(k in node)) node[k] = v;
        SCHEMA_PATCHES.push(`${where}: moved properties.${k} to the object level`);
      }
    }
  }
  for (const [k, v] of Object.entries(node)) hoistMisplaced(v, `${where}/${k}`);
}

function patchSchema(raw: Json): Json {
  const s = structuredClone(raw);
  const defs = s.$defs;
  hoistMisplaced(s, '#');

  // 2. A2APartialAgentDetails: url/name/version under a bogus `agent` key.
  const pad = defs.A2APartialAgentDetails;
  if (pad?.properties?.agent && !pad.properties.agent.type && pad.properties.agent.url) {
    const { url, name, version } = pad.properties.agent;
    pad.properties = { url, name, version };
    pad.required = ['url', 'name', 'version'];
    SCHEMA_PATCHES.push('A2APartialAgentDetails: hoisted url/name/version out of `agent`, made them required');
  }

  // 3. A2AContext: oneOf -> anyOf, and the required members of §3.16.
  const ctx = defs.A2AContext;
  for (const side of ['from', 'to']) {
    const p = ctx?.properties?.[side];
    if (p?.oneOf) {
      p.anyOf = p.oneOf;
      delete p.oneOf;
      SCHEMA_PATCHES.push(`A2AContext.${side}: oneOf -> anyOf (Full and Partial overlap)`);
    }
  }
  ctx.required ??= ['from', 'to'];
  for (const name of ['A2AFullAgentContext', 'A2APartialAgentContext']) defs[name].required ??= ['agent', 'role'];

  // 4. Method constants.
  for (const [def, method] of Object.entries(METHOD_CONST_FIXES)) {
    const m = defs[def]?.properties?.method;
    if (m && m.const !== method) {
      SCHEMA_PATCHES.push(`${def}.method: const "${m.const}" -> "${method}"`);
      m.const = method;
      m.default = method;
    }
  }
  // The A2A request envelopes: object type + jsonrpc required (§4.8.1).
  for (const def of Object.values(AOS_METHOD_DEFS)) {
    const d = defs[def];
    d.type ??= 'object';
    d.required = Array.from(new Set([...(d.required ?? []), 'jsonrpc', 'method', 'params', 'id']));
    d.properties.params.required ??= ['payload', 'context'];
  }

  // 5. PingRequest.timestamp belongs to params.
  const ping = defs.PingRequest;
  if (Array.isArray(ping?.required) && ping.required.includes('timestamp')) {
    ping.required = ping.required.filter((r: string) => r !== 'timestamp');
    ping.properties.params.required = ['timestamp'];
    SCHEMA_PATCHES.push('PingRequest: required timestamp moved into params');
  }
  return s;
}

const loaded = loadRawSchema();
/** Path the schema was loaded from. */
export const SCHEMA_SOURCE = loaded.from;
/** The repaired schema. */
export const AOS_SCHEMA: Json = patchSchema(loaded.schema);

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(AOS_SCHEMA, 'aos');

const compiled = new Map<string, ValidateFunction>();
function validatorFor(def: string): ValidateFunction {
  let v = compiled.get(def);
  if (!v) {
    v = ajv.getSchema(`aos#/$defs/${def}`);
    if (!v) throw new Error(`no $defs/${def} in the AOS schema`);
    compiled.set(def, v);
  }
  return v;
}

function fmt(errors: ErrorObject[] | null | undefined, prefix = ''): string[] {
  return (errors ?? []).map((e) => {
    const extra =
      e.keyword === 'required' || e.keyword === 'additionalProperties' || e.keyword === 'const' || e.keyword === 'enum' ? ` ${JSON.stringify(e.params)}` : '';
    return `${prefix}${e.instancePath || '/'} ${e.message ?? e.keyword}${extra}`;
  });
}

/** Validate `obj` against `$defs/<def>` of the repaired schema; [] = valid. */
export function validateDef(def: string, obj: unknown, prefix = ''): string[] {
  const v = validatorFor(def);
  return v(obj) ? [] : fmt(v.errors, prefix);
}

/** Validate an AOS `Agent` object (spec §3.1: id, name, url, instructions, version, provider{name,url} required). */
export function validateAgent(obj: unknown): string[] {
  return validateDef('Agent', obj);
}

export interface ValidateAosOptions {
  /**
   * Which side carries the observed agent's full `Agent` (checked with validateAgent):
   * 'from' | 'to' | 'auto' (default: any side whose agent has keys beyond url/name/version/id/metadata) | 'none'.
   * Request hooks: client side → 'from', server side → 'to'. Response hooks: the reverse.
   */
  fullSide?: 'from' | 'to' | 'auto' | 'none';
}

// A verified caller also carries `id` and `metadata.identity` (README "Identity"); it is still the partial side.
const PARTIAL_KEYS = new Set(['url', 'name', 'version', 'id', 'metadata']);

/**
 * Validate an AOS A2A envelope (4.8 request hook, or 4.9 response hook: same shape) for
 * `aosMethod`; also checks `envelope.method === aosMethod` and the full side's Agent.
 * Returns error strings; [] = valid.
 */
export function validateAosRequest(envelope: unknown, aosMethod: string, opts: ValidateAosOptions = {}): string[] {
  const def = AOS_METHOD_DEFS[aosMethod];
  if (!def) return [`unknown AOS A2A method "${aosMethod}"`];
  const errors = validateDef(def, envelope);
  const env = envelope as Json;
  if (env?.method !== aosMethod) errors.push(`/method is ${JSON.stringify(env?.method)}, expected "${aosMethod}"`);
  const ctx = env?.params?.context;
  const mode = opts.fullSide ?? 'auto';
  for (const side of ['from', 'to'] as const) {
    const agent = ctx?.[side]?.agent;
    const isFull = mode === side || (mode === 'auto' && agent && typeof agent === 'object' && Object.keys(agent).some((k) => !PARTIAL_KEYS.has(k)));
    if (isFull) errors.push(...fmt(validatorFor('Agent')(agent) ? [] : validatorFor('Agent').errors, `/params/context/${side}/agent`));
    else if (mode !== 'none' && agent !== undefined) errors.push(...validateDef('A2APartialAgentDetails', agent, `/params/context/${side}/agent`));
  }
  return errors;
}

/** Validate a guardian answer against ASOPSuccessResponse (the spec's AOSSuccessResponse). */
export function validateSuccessResponse(obj: unknown): string[] {
  return validateDef('ASOPSuccessResponse', obj);
}

/** Validate a ping answer against PingRequestSuccessResponse. */
export function validatePingResponse(obj: unknown): string[] {
  return validateDef('PingRequestSuccessResponse', obj);
}

/* ------------------------------------------------------------------------------------------ */
/* Seed examples                                                                              */
/* ------------------------------------------------------------------------------------------ */

/** Index just past the JSON value starting at `start` (a '{' or '['), honouring strings. */
function endOfJson(text: string, start: number): number {
  let depth = 0;
  let inStr = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  throw new Error('unterminated JSON block');
}

/** Remove trailing commas before } or ] (outside strings). */
export function stripTrailingCommas(json: string): string {
  let out = '';
  let inStr = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i] as string;
    if (inStr) {
      out += c;
      if (c === '\\') out += json[++i] ?? '';
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') inStr = true;
    if (c === ',') {
      const rest = json.slice(i + 1).match(/^\s*([}\]])/);
      if (rest) continue;
    }
    out += c;
  }
  return out;
}

/** The JSON blocks found under each "5. AOS payload" heading of a seed document, parsed. */
export function extractAosPayloads(doc: string): Json[] {
  const out: Json[] = [];
  let from = 0;
  for (;;) {
    const at = doc.indexOf('5. AOS payload', from);
    if (at < 0) return out;
    const start = doc.indexOf('{', at);
    if (start < 0) return out;
    const end = endOfJson(doc, start);
    out.push(JSON.parse(stripTrailingCommas(doc.slice(start, end))));
    from = end;
  }
}

/** Parsed AOS payloads of the seed file whose name starts with `prefix` (e.g. "000_"); null if absent. */
export function seedAosPayloads(prefix: string): Json[] | null {
  if (!fs.existsSync(SEEDS_DIR)) return null;
  const file = fs.readdirSync(SEEDS_DIR).find((f) => f.startsWith(prefix));
  if (!file) return null;
  return extractAosPayloads(fs.readFileSync(path.join(SEEDS_DIR, file), 'utf8'));
}
