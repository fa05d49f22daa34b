/**
 * fast-check generators of real A2A calls and of the ways their bytes can be bent, for the
 * differential test (test/integration/bindings/differential.test.ts).
 *
 * A case is a real call (JSON-RPC or REST, A2A v1.0 or v0.3, any of the 11 operations, or an
 * agent-card read) plus a short list of mutations, rendered to exact wire bytes (wire.ts). Every
 * pool lists its plain value first, so shrinking walks towards plain calls and the shortest list
 * of mutations that still shows a difference.
 *
 * Dimensions: A2A-Version spellings, duplicates and query form; Content-Type values, parameters,
 * casing, duplicates and charsets (the body then encoded in that charset: UTF-7 with letters
 * shifted into base64, UTF-16, UTF-32, Latin-1); Content-Encoding stacks and spellings; framing
 * (Content-Length, chunked with and without extensions, Transfer-Encoding stacks, both, none);
 * Connection tokens naming end-to-end headers; method-override headers; proxy-owned headers;
 * JSON tricks (duplicate keys before/after, case-folded and snake_case member names with other
 * values, \u escapes, whitespace, BOM, id forms, binding-foreign fields); method names (the other
 * version's, near misses, unknown); REST paths (percent-encoding, double encoding, case, trailing
 * slash, `;`, `//`, `/./`, `..`, tenant prefixes, ids that are route words or carry `:verb`);
 * verbs; query strings (A2A-Version, tenant, repeats).
 */
import zlib from 'node:zlib';
import fc from 'fast-check';
import { V03_METHODS, V1_METHODS, type OpKey } from './a2a-facts';
import { type WireRequest } from './wire';

/* ------------------------------------------------------------------------------------------ */
/* JSON with control over every byte                                                          */
/* ------------------------------------------------------------------------------------------ */

/** JSON as written: objects keep member order and may repeat names; numbers keep their spelling. */
export type J =
  | { readonly t: 'o'; readonly m: ReadonlyArray<readonly [string, J]> }
  | { readonly t: 'a'; readonly v: readonly J[] }
  | { readonly t: 's'; readonly v: string }
  | { readonly t: 'n'; readonly raw: string }
  | { readonly t: 'lit'; readonly raw: 'true' | 'false' | 'null' };

export function toJ(v: unknown): J {
  if (v === null || v === undefined) return { t: 'lit', raw: 'null' };
  if (typeof v === 'boolean') return { t: 'lit', raw: v ? 'true' : 'false' };
  if (typeof v === 'number') return { t: 'n', raw: JSON.stringify(v) };
  if (typeof v === 'string') return { t: 's', v };
  if (Array.isArray(v)) return { t: 'a', v: v.map(toJ) };
  return {
    t: 'o',
    m: Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => [k, toJ(x)] as const),
  };
}

export interface JsonStyle {
  /** 'letters': ASCII letters of strings and names as \u00XX; 'slash': "/" as "\/". */
  readonly escape: 'none' | 'letters' | 'slash';
  readonly space: 'none' | 'pretty' | 'odd';
}

function emitString(s: string, style: JsonStyle): string {
  const plain = JSON.stringify(s);
  if (style.escape === 'letters') return plain.replace(/[A-Za-z]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (style.escape === 'slash') return plain.replace(/\//g, '\\/');
  return plain;
}

export function emitJ(j: J, style: JsonStyle, depth = 0): string {
  const nl = style.space === 'pretty' ? `\n${'  '.repeat(depth + 1)}` : style.space === 'odd' ? '\r\n\t ' : '';
  const end = style.space === 'pretty' ? `\n${'  '.repeat(depth)}` : style.space === 'odd' ? ' \t' : '';
  const colon = style.space === 'none' ? ':' : style.space === 'odd' ? ' \t:\r\n' : ': ';
  switch (j.t) {
    case 's':
      return emitString(j.v, style);
    case 'n':
    case 'lit':
      return j.raw;
    case 'a':
      return j.v.length === 0 ? '[]' : `[${j.v.map((x) => nl + emitJ(x, style, depth + 1)).join(',')}${end}]`;
    case 'o':
      return j.m.length === 0 ? '{}' : `{${j.m.map(([k, x]) => `${nl}${emitString(k, style)}${colon}${emitJ(x, style, depth + 1)}`).join(',')}${end}}`;
  }
}

type Step = string | number;

/** Rewrite the node at `path` (undefined when the path does not exist: then nothing changes). */
function updateAt(j: J, path: readonly Step[], fn: (node: J) => J): J | undefined {
  if (path.length === 0) return fn(j);
  const [head, ...rest] = path;
  if (j.t === 'o' && typeof head === 'string') {
    let hit = false;
    // The last member of that name is the one JSON.parse keeps.
    const idx = j.m.map(([k]) => k).lastIndexOf(head);
    if (idx < 0) return undefined;
    const m = j.m.map((e, i) => {
      if (i !== idx) return e;
      const n = updateAt(e[1], rest, fn);
      if (n === undefined) return e;
      hit = true;
      return [e[0], n] as const;
    });
    return hit ? { t: 'o', m } : undefined;
  }
  if (j.t === 'a' && typeof head === 'number' && head < j.v.length) {
    const n = updateAt(j.v[head] as J, rest, fn);
    return n === undefined ? undefined : { t: 'a', v: j.v.map((x, i) => (i === head ? n : x)) };
  }
  return undefined;
}

/** Rewrite the members of the object holding `path`'s last name. */
function updateMembers(
  j: J,
  path: readonly Step[],
  fn: (m: ReadonlyArray<readonly [string, J]>, name: string) => ReadonlyArray<readonly [string, J]> | undefined,
): J | undefined {
  const name = path[path.length - 1];
  if (typeof name !== 'string') return undefined;
  return updateAt(j, path.slice(0, -1), (o) => {
    if (o.t !== 'o' || !o.m.some(([k]) => k === name)) return o;
    const m = fn(o.m, name);
    return m === undefined ? o : { t: 'o', m };
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Charsets                                                                                   */
/* ------------------------------------------------------------------------------------------ */

export type Encoding = 'utf8' | 'utf7-letters' | 'utf7' | 'utf16le' | 'utf16be' | 'utf16le-bom' | 'utf32le' | 'latin1';

/** UTF-7 (RFC 2152), optionally with every ASCII letter shifted into base64: a UTF-7 decoder reads it, a UTF-8 reader does not. */
function utf7(text: string, lettersToo: boolean): Buffer {
  let out = '';
  let run = '';
  const flush = (): void => {
    if (run === '') return;
    const units = Buffer.alloc(run.length * 2);
    for (let i = 0; i < run.length; i++) units.writeUInt16BE(run.charCodeAt(i), i * 2);
    out += `+${units.toString('base64').replace(/=+$/, '')}-`;
    run = '';
  };
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    const direct = c < 0x80 && c !== 0x2b && c !== 0x5c && c !== 0x7e && !(lettersToo && /[A-Za-z]/.test(ch));
    if (direct) {
      flush();
      out += ch;
    } else if (ch === '+' && !lettersToo) {
      flush();
      out += '+-';
    } else {
      run += ch;
    }
  }
  flush();
  return Buffer.from(out, 'latin1');
}

export function encodeText(text: string, enc: Encoding): Buffer {
  switch (enc) {
    case 'utf8':
      return Buffer.from(text, 'utf8');
    case 'utf7-letters':
      // Letters inside JSON strings only: to a UTF-8 reader the body stays strict JSON with other names and values.
      return Buffer.concat((text.match(/"(?:[^"\\]|\\.)*"|[^"]+|"/g) ?? []).map((t) => utf7(t, t.startsWith('"'))));
    case 'utf7':
      return utf7(text, false);
    case 'utf16le':
      return Buffer.from(text, 'utf16le');
    case 'utf16le-bom':
      return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    case 'utf16be': {
      const le = Buffer.from(text, 'utf16le');
      const be = Buffer.alloc(le.length);
      for (let i = 0; i + 1 < le.length; i += 2) {
        be[i] = le[i + 1] as number;
        be[i + 1] = le[i] as number;
      }
      return be;
    }
    case 'utf32le': {
      const cps = [...text].map((c) => c.codePointAt(0) as number);
      const b = Buffer.alloc(cps.length * 4);
      cps.forEach((cp, i) => b.writeUInt32LE(cp, i * 4));
      return b;
    }
    case 'latin1':
      return Buffer.from(text, 'latin1');
  }
}

function compress(body: Buffer, coding: string): Buffer {
  switch (coding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.gzipSync(body);
    case 'deflate':
      return zlib.deflateSync(body);
    case 'br':
      return zlib.brotliCompressSync(body);
    default:
      return body; // identity and unknown codings leave the bytes alone
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Real calls                                                                                 */
/* ------------------------------------------------------------------------------------------ */

export type Family = 'jsonrpc-1.0' | 'jsonrpc-0.3' | 'rest-1.0' | 'rest-0.3' | 'card';
export const FAMILIES: readonly Family[] = ['jsonrpc-1.0', 'jsonrpc-0.3', 'rest-1.0', 'rest-0.3', 'card'];
export const OPS: readonly OpKey[] = ['send', 'get', 'cancel', 'stream', 'subscribe', 'pushSet', 'pushGet', 'pushList', 'pushDelete', 'extCard', 'list'];

export const V1_NAME: Readonly<Record<OpKey, string>> = {
  send: 'SendMessage',
  stream: 'SendStreamingMessage',
  get: 'GetTask',
  list: 'ListTasks',
  cancel: 'CancelTask',
  subscribe: 'SubscribeToTask',
  pushSet: 'CreateTaskPushNotificationConfig',
  pushGet: 'GetTaskPushNotificationConfig',
  pushList: 'ListTaskPushNotificationConfigs',
  pushDelete: 'DeleteTaskPushNotificationConfig',
  extCard: 'GetExtendedAgentCard',
};
export const V03_NAME: Readonly<Record<OpKey, string>> = {
  send: 'message/send',
  stream: 'message/stream',
  get: 'tasks/get',
  list: 'tasks/list',
  cancel: 'tasks/cancel',
  subscribe: 'tasks/resubscribe',
  pushSet: 'tasks/pushNotificationConfig/set',
  pushGet: 'tasks/pushNotificationConfig/get',
  pushList: 'tasks/pushNotificationConfig/list',
  pushDelete: 'tasks/pushNotificationConfig/delete',
  extCard: 'agent/getAuthenticatedExtendedCard',
};

export interface Base {
  readonly family: Family;
  readonly op: OpKey;
  readonly task: string;
  readonly config: string;
  readonly context: string;
  readonly tenant: string;
  readonly text: string;
  readonly url: string;
  readonly nonce: number;
  readonly rpcId: number | string | null;
  /** Follow-up turn (message.taskId / contextId set). */
  readonly followUp: boolean;
  readonly subscribeVerb: 'POST' | 'GET';
  readonly cardPath: string;
}

/** Ids that are also route words, carry a custom verb, or need encoding. Plain first. */
const TASK_IDS = [
  't-',
  'tasks',
  'extendedAgentCard',
  'v1',
  'card',
  'message:send',
  'a:cancel',
  'a:subscribe',
  'pushNotificationConfigs',
  '..',
  '.',
  'x/y',
  'ü',
  '',
  'A%41',
];
const CONFIG_IDS = ['cfg-', 'cfg:cancel', 'pushNotificationConfigs', '..', '', 'tasks'];
const TENANTS = ['', 'acme', 'v1', 'tasks', 'message:send', 'extendedAgentCard', 'a2a', 'rest', 'T%41', '.well-known'];
const TEXTS = ['hello', 'molotov', 'çà ☕', 'a"b\\c+d', 'line\u2028sep'];
const URLS = ['https://hooks.example.com/cb', 'http://127.0.0.1:9/cb', 'http://169.254.169.254/latest/meta-data'];
const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'];

export const baseArb: fc.Arbitrary<Base> = fc.record({
  family: fc.constantFrom(...FAMILIES),
  op: fc.constantFrom(...OPS),
  task: fc.constantFrom(...TASK_IDS),
  config: fc.constantFrom(...CONFIG_IDS),
  context: fc.constantFrom('c-', 'contexts', ''),
  tenant: fc.constantFrom(...TENANTS),
  text: fc.constantFrom(...TEXTS),
  url: fc.constantFrom(...URLS),
  nonce: fc.nat({ max: 999_999 }),
  rpcId: fc.constantFrom<number | string | null>(1, 'req-1', 0, null),
  followUp: fc.boolean(),
  subscribeVerb: fc.constantFrom('POST' as const, 'GET' as const),
  cardPath: fc.constantFrom(...CARD_PATHS),
});

/** A request before rendering: everything a mutation may bend. */
export interface Draft {
  readonly binding: 'jsonrpc' | 'rest' | 'card';
  readonly verb: string;
  /** Path segments, raw (as they go on the wire); the first `baseLen` are the binding's mount point. */
  readonly segs: readonly string[];
  readonly baseLen: number;
  /** Appended to the path as is (trailing slash, `;x`, ...). */
  readonly pathSuffix: string;
  readonly query: ReadonlyArray<readonly [string, string]>;
  /** Header lines before Content-Type, Content-Encoding and framing headers. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** Content-Type media type; undefined = no Content-Type line. */
  readonly mediaType: string | undefined;
  /** Parameters appended to the media type, e.g. `; charset=utf-7`. */
  readonly ctParams: string;
  readonly json: J | undefined;
  /** A raw body that replaces `json`. */
  readonly rawBody: string | undefined;
  readonly style: JsonStyle;
  readonly bom: boolean;
  readonly encoding: Encoding;
  /** Content codings, in the order they were applied. */
  readonly codings: readonly string[];
  /** How Content-Encoding is written: one line, or one line per coding. */
  readonly codingLines: 'one' | 'each';
  readonly framing: 'length' | 'chunked' | 'chunked-ext' | 'te-gzip-chunked' | 'both' | 'none' | 'chunked-case';
  readonly notes: readonly string[];
}

const enc = encodeURIComponent;

function restSegments(b: Base, v1: boolean): { verb: string; segs: string[]; body?: unknown; query: Array<[string, string]> } {
  const t = b.task === 't-' ? `t-${b.nonce}` : b.task;
  const c = b.config === 'cfg-' ? `cfg-${b.nonce}` : b.config;
  const pre = v1 ? [] : ['v1'];
  const text = `${b.text} #${b.nonce}`;
  const msg = v1
    ? { messageId: `m-${b.nonce}`, role: 'ROLE_USER', parts: [{ text }], ...(b.followUp ? { taskId: t, contextId: b.context } : {}) }
    : { messageId: `m-${b.nonce}`, role: 'ROLE_USER', content: [{ text }], ...(b.followUp ? { taskId: t, contextId: b.context } : {}) };
  switch (b.op) {
    case 'send':
      return {
        verb: 'POST',
        segs: [...pre, 'message:send'],
        body: { message: msg, configuration: v1 ? { returnImmediately: false } : { blocking: true } },
        query: [],
      };
    case 'stream':
      return { verb: 'POST', segs: [...pre, 'message:stream'], body: { message: msg }, query: [] };
    case 'get':
      return { verb: 'GET', segs: [...pre, 'tasks', enc(t)], query: [] };
    case 'list':
      return { verb: 'GET', segs: [...pre, 'tasks'], query: b.context === '' ? [] : [['contextId', enc(b.context)]] };
    case 'cancel':
      return { verb: 'POST', segs: [...pre, 'tasks', `${enc(t)}:cancel`], query: [] };
    case 'subscribe':
      return { verb: b.subscribeVerb, segs: [...pre, 'tasks', `${enc(t)}:subscribe`], query: [] };
    case 'pushSet':
      return {
        verb: 'POST',
        segs: [...pre, 'tasks', enc(t), 'pushNotificationConfigs'],
        query: [],
        body: v1
          ? { url: b.url, id: c, token: `tok-${b.nonce}` }
          : { name: `tasks/${t}/pushNotificationConfigs/${c}`, pushNotificationConfig: { url: b.url, id: c, token: `tok-${b.nonce}` } },
      };
    case 'pushGet':
      return { verb: 'GET', segs: [...pre, 'tasks', enc(t), 'pushNotificationConfigs', enc(c)], query: [] };
    case 'pushList':
      return { verb: 'GET', segs: [...pre, 'tasks', enc(t), 'pushNotificationConfigs'], query: [] };
    case 'pushDelete':
      return { verb: 'DELETE', segs: [...pre, 'tasks', enc(t), 'pushNotificationConfigs', enc(c)], query: [] };
    case 'extCard':
      return { verb: 'GET', segs: v1 ? ['extendedAgentCard'] : ['v1', 'card'], query: [] };
  }
}

/** JSON-RPC params of an operation, in the version's own shapes. */
export function rpcParams(b: Base, v1: boolean): Record<string, unknown> | undefined {
  const t = b.task === 't-' ? `t-${b.nonce}` : b.task;
  const c = b.config === 'cfg-' ? `cfg-${b.nonce}` : b.config;
  const text = `${b.text} #${b.nonce}`;
  const tenant = v1 && b.tenant !== '' ? { tenant: b.tenant } : {};
  const follow = b.followUp ? { taskId: t, contextId: b.context } : {};
  switch (b.op) {
    case 'send':
    case 'stream':
      return v1
        ? {
            ...tenant,
            message: { messageId: `m-${b.nonce}`, role: 'ROLE_USER', parts: [{ text }], ...follow },
            ...(b.op === 'send' ? { configuration: { returnImmediately: false } } : {}),
          }
        : {
            message: { kind: 'message', messageId: `m-${b.nonce}`, role: 'user', parts: [{ kind: 'text', text }], ...follow },
            ...(b.op === 'send' ? { configuration: { blocking: true } } : {}),
          };
    case 'get':
    case 'cancel':
    case 'subscribe':
      return { ...tenant, id: t };
    case 'list':
      return { ...tenant, ...(b.context === '' ? {} : { contextId: b.context }) };
    case 'pushSet':
      return v1
        ? { ...tenant, taskId: t, id: c, url: b.url, token: `tok-${b.nonce}` }
        : { taskId: t, pushNotificationConfig: { url: b.url, id: c, token: `tok-${b.nonce}` } };
    case 'pushGet':
    case 'pushDelete':
      return v1 ? { ...tenant, taskId: t, id: c } : { id: t, pushNotificationConfigId: c };
    case 'pushList':
      return v1 ? { ...tenant, taskId: t } : { id: t };
    case 'extCard':
      return v1 && b.tenant !== '' ? { tenant: b.tenant } : undefined;
  }
}

const STREAMING: ReadonlySet<OpKey> = new Set(['stream', 'subscribe']);

const split = (p: string): string[] => p.split('/').filter((x) => x !== '');

export function draftOf(b: Base): Draft {
  const common = {
    pathSuffix: '',
    ctParams: '',
    rawBody: undefined,
    style: { escape: 'none', space: 'none' } as JsonStyle,
    bom: false,
    encoding: 'utf8' as Encoding,
    codings: [] as string[],
    codingLines: 'one' as const,
    framing: 'length' as const,
    notes: [] as string[],
  };
  const accept: [string, string] = ['Accept', STREAMING.has(b.op) ? 'text/event-stream' : 'application/json'];
  if (b.family === 'card') {
    const segs = split(b.cardPath);
    return {
      ...common,
      binding: 'card',
      verb: 'GET',
      segs,
      baseLen: segs.length,
      query: [],
      headers: [['A2A-Version', '1.0'], accept],
      mediaType: undefined,
      json: undefined,
    };
  }
  if (b.family === 'jsonrpc-1.0' || b.family === 'jsonrpc-0.3') {
    const v1 = b.family === 'jsonrpc-1.0';
    const params = rpcParams(b, v1);
    const body = { jsonrpc: '2.0', id: b.rpcId, method: v1 ? V1_NAME[b.op] : V03_NAME[b.op], ...(params === undefined ? {} : { params }) };
    const headers: Array<[string, string]> = v1 ? [['A2A-Version', '1.0'], accept] : [accept];
    return {
      ...common,
      binding: 'jsonrpc',
      verb: 'POST',
      segs: ['a2a', 'jsonrpc'],
      baseLen: 2,
      query: [],
      headers,
      mediaType: 'application/json',
      json: toJ(body),
    };
  }
  const v1 = b.family === 'rest-1.0';
  const r = restSegments(b, v1);
  const tenantSegs = v1 && b.tenant !== '' ? [enc(b.tenant)] : [];
  const headers: Array<[string, string]> = v1 ? [['A2A-Version', '1.0'], accept] : [accept];
  return {
    ...common,
    binding: 'rest',
    verb: r.verb,
    segs: ['a2a', 'rest', ...tenantSegs, ...r.segs],
    baseLen: 2,
    query: r.query,
    headers,
    mediaType: r.body === undefined ? undefined : 'application/json',
    json: r.body === undefined ? undefined : toJ(r.body),
  };
}

/* ------------------------------------------------------------------------------------------ */
/* Mutations                                                                                  */
/* ------------------------------------------------------------------------------------------ */

export type Mutation = { readonly label: string; readonly apply: (d: Draft) => Draft | undefined };

const note = (d: Draft, label: string, patch: Partial<Draft>): Draft => ({ ...d, ...patch, notes: [...d.notes, label] });
const withoutHeader = (h: Draft['headers'], name: string): Draft['headers'] => h.filter(([k]) => k.toLowerCase() !== name.toLowerCase());

const VERSION_NAMES = ['A2A-Version', 'a2a-version', 'A2A-VERSION', 'a2a_version', 'A2A-Version '];
const VERSION_VALUES = ['1.0', '0.3', '', '1', '1.0.0', '0.3.0', '2.0', ' 1.0 ', '1.0, 0.3', '0.3, 1.0', '01.0', '0.9'];

const versionHeader = fc
  .record({ name: fc.constantFrom(...VERSION_NAMES), value: fc.constantFrom(...VERSION_VALUES), mode: fc.constantFrom('set', 'remove', 'add') })
  .map(({ name, value, mode }): Mutation => ({
    label: mode === 'remove' ? 'no A2A-Version' : `${mode === 'add' ? 'another' : 'set'} header ${JSON.stringify(name)}: ${JSON.stringify(value)}`,
    apply: (d) => {
      const rest = mode === 'add' ? d.headers : withoutHeader(d.headers, 'a2a-version');
      const headers = mode === 'remove' ? rest : [...rest, [name, value] as const];
      return note(d, mode === 'remove' ? 'no A2A-Version' : `${mode === 'add' ? 'another' : 'set'} ${name.trim()}: ${JSON.stringify(value)}`, { headers });
    },
  }));

const versionQuery = fc
  .record({ name: fc.constantFrom('A2A-Version', 'a2a-version'), value: fc.constantFrom('1.0', '0.3', '2.0') })
  .map(({ name, value }): Mutation => ({
    label: `?${name}=${value}`,
    apply: (d) => note(d, `query ${name}=${value}`, { query: [...d.query, [name, value]] }),
  }));

const MEDIA_TYPES = [
  'application/json',
  'application/JSON',
  'Application/Json',
  'application/a2a+json',
  'text/plain',
  'application/json-patch+json',
  'application/x-www-form-urlencoded',
  'text/json',
  '',
  'application/json, text/plain',
  ' application/json',
  '*/*',
];
const contentType = fc
  .record({
    media: fc.constantFrom<string | undefined>(...MEDIA_TYPES, undefined),
    twice: fc.constantFrom<string | undefined>(undefined, 'text/plain', 'application/json'),
  })
  .map(({ media, twice }): Mutation => ({
    label: `Content-Type ${JSON.stringify(media)}${twice === undefined ? '' : ` + second line ${twice}`}`,
    apply: (d) => {
      if (d.json === undefined && d.rawBody === undefined) return undefined;
      const headers = twice === undefined ? d.headers : [...d.headers, ['Content-Type', twice] as const];
      return note(
        d,
        `Content-Type ${media === undefined ? '(none)' : JSON.stringify(media)}${twice === undefined ? '' : ` and another Content-Type: ${twice}`}`,
        { mediaType: media, headers },
      );
    },
  }));

/** [declared charset parameter, bytes actually sent]. */
const CHARSETS: ReadonlyArray<readonly [string, Encoding]> = [
  ['charset=utf-8', 'utf8'],
  ['charset=UTF-8', 'utf8'],
  ['charset=utf8', 'utf8'],
  ['charset="utf-8"', 'utf8'],
  ['charset=utf-7', 'utf7-letters'],
  ['charset=UTF-7', 'utf7-letters'],
  ['charset=utf-7', 'utf7'],
  ['charset=utf-7', 'utf8'],
  ['charset=utf-16', 'utf16le-bom'],
  ['charset=utf-16le', 'utf16le'],
  ['charset=utf-16be', 'utf16be'],
  ['charset=utf-16', 'utf16be'],
  ['charset=utf-32', 'utf32le'],
  ['charset=utf-32le', 'utf32le'],
  ['charset=iso-8859-1', 'latin1'],
  ['charset=latin1', 'latin1'],
  ['charset=us-ascii', 'utf8'],
  ['charset=utf-8; charset=utf-7', 'utf7-letters'],
  ['charset=utf-7; charset=utf-8', 'utf8'],
  ['', 'utf16le'],
  ['', 'utf16le-bom'],
  ['', 'utf32le'],
  ['CHARSET=utf-16le', 'utf16le'],
  ['charset = utf-16le', 'utf16le'],
  ['foo=bar', 'utf8'],
  ['boundary=x; charset=utf-16be', 'utf16be'],
];
const charset = fc.constantFrom(...CHARSETS).map(([param, encoding]): Mutation => ({
  label: `${param === '' ? 'no charset' : param}, body in ${encoding}`,
  apply: (d) => {
    if (d.json === undefined && d.rawBody === undefined) return undefined;
    return note(d, `Content-Type parameters ${JSON.stringify(param)}, body bytes ${encoding}`, { ctParams: param === '' ? '' : `; ${param}`, encoding });
  },
}));

const CODINGS: ReadonlyArray<readonly string[]> = [
  ['gzip'],
  ['deflate'],
  ['br'],
  ['gzip', 'gzip'],
  ['identity'],
  ['gzip', 'identity'],
  ['identity', 'gzip'],
  ['GZIP'],
  ['x-gzip'],
  ['deflate', 'gzip'],
  ['gzip', 'gzip', 'gzip'],
  ['zstd'],
  ['compress'],
];
const contentEncoding = fc
  .record({ codings: fc.constantFrom(...CODINGS), lines: fc.constantFrom('one' as const, 'each' as const) })
  .map(({ codings, lines }): Mutation => ({
    label: `Content-Encoding ${codings.join(', ')}${lines === 'each' ? ' (one line each)' : ''}`,
    apply: (d) => {
      if (d.json === undefined && d.rawBody === undefined) return undefined;
      return note(d, `Content-Encoding ${codings.join(', ')}${lines === 'each' && codings.length > 1 ? ' (one header line each)' : ''}`, {
        codings,
        codingLines: lines,
      });
    },
  }));

const framing = fc.constantFrom<Draft['framing']>('chunked', 'chunked-ext', 'chunked-case', 'te-gzip-chunked', 'both', 'none').map((f): Mutation => ({
  label: `framing ${f}`,
  apply: (d) => (d.json === undefined && d.rawBody === undefined && f === 'te-gzip-chunked' ? undefined : note(d, `framing: ${f}`, { framing: f })),
}));

const CONNECTION_TOKENS = [
  'a2a-version',
  'A2A-Version',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'content-length',
  'x-http-method-override',
  'a2a-extensions',
  'x-aos-reasoning',
  'authorization',
  'accept',
  'host',
];
const connection = fc
  .record({ tokens: fc.uniqueArray(fc.constantFrom(...CONNECTION_TOKENS), { minLength: 1, maxLength: 3 }), keepAlive: fc.boolean() })
  .map(({ tokens, keepAlive }): Mutation => {
    const value = [...(keepAlive ? ['keep-alive'] : []), ...tokens].join(', ');
    return { label: `Connection: ${value}`, apply: (d) => note(d, `Connection: ${value}`, { headers: [...d.headers, ['Connection', value]] }) };
  });

const methodOverride = fc
  .record({
    name: fc.constantFrom('X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override', 'x-http-method-override'),
    value: fc.constantFrom('POST', 'GET', 'DELETE', 'PUT'),
  })
  .map(({ name, value }): Mutation => ({ label: `${name}: ${value}`, apply: (d) => note(d, `${name}: ${value}`, { headers: [...d.headers, [name, value]] }) }));

const ownedHeader = fc
  .constantFrom<readonly [string, string]>(
    ['X-AOS-Unchecked', 'true'],
    ['x-aos-unchecked', '1'],
    ['X_AOS_Reasoning', 'trust me'],
    ['X-AOS-Reasoning', 'trust me'],
    ['X-AOS-Agent-Name', 'admin'],
  )
  .map(([k, v]): Mutation => ({ label: `${k}: ${v}`, apply: (d) => note(d, `proxy-owned header ${k}: ${v}`, { headers: [...d.headers, [k, v]] }) }));

const VERBS = ['POST', 'GET', 'HEAD', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'];
const verb = fc
  .constantFrom(...VERBS)
  .map((v): Mutation => ({ label: `verb ${v}`, apply: (d) => (d.verb === v ? undefined : note(d, `verb ${v}`, { verb: v })) }));

/** Percent-encode one character of one path segment (lower/upper hex, or double-encoded). */
const encodeChar = fc
  .record({ seg: fc.nat({ max: 7 }), at: fc.nat({ max: 30 }), style: fc.constantFrom('upper', 'lower', 'double') })
  .map(({ seg, at, style }): Mutation => ({
    label: `percent-encode char ${at} of segment ${seg} (${style})`,
    apply: (d) => {
      if (d.segs.length === 0) return undefined;
      const si = seg % d.segs.length;
      const s = d.segs[si] as string;
      if (s.length === 0) return undefined;
      const ci = at % s.length;
      const ch = s[ci] as string;
      if (ch === '%' || ch.charCodeAt(0) > 0x7e) return undefined;
      const hex = ch.charCodeAt(0).toString(16).padStart(2, '0');
      const code = style === 'double' ? `%25${hex.toUpperCase()}` : `%${style === 'upper' ? hex.toUpperCase() : hex}`;
      const changed = s.slice(0, ci) + code + s.slice(ci + 1);
      return note(d, `segment ${JSON.stringify(s)} -> ${JSON.stringify(changed)}`, { segs: d.segs.map((x, i) => (i === si ? changed : x)) });
    },
  }));

const caseChange = fc.record({ seg: fc.nat({ max: 7 }), style: fc.constantFrom('upper', 'title', 'lower') }).map(({ seg, style }): Mutation => ({
  label: `case ${style} of segment ${seg}`,
  apply: (d) => {
    if (d.segs.length === 0) return undefined;
    const si = seg % d.segs.length;
    const s = d.segs[si] as string;
    // Leave escapes alone: %2f and %2F are the same octet.
    const conv = (x: string): string =>
      x.replace(/%[0-9a-fA-F]{2}|[^%]+/g, (p) =>
        p.startsWith('%') ? p : style === 'upper' ? p.toUpperCase() : style === 'lower' ? p.toLowerCase() : p.charAt(0).toUpperCase() + p.slice(1),
      );
    const changed = conv(s);
    if (changed === s) return undefined;
    return note(d, `segment ${JSON.stringify(s)} -> ${JSON.stringify(changed)}`, { segs: d.segs.map((x, i) => (i === si ? changed : x)) });
  },
}));

const SUFFIXES = ['/', ';', ';x=1', '%20', '.', '/.', '//', '?', '#frag', '%00', '/..', ':cancel', ':subscribe', ':send'];
const pathSuffix = fc.constantFrom(...SUFFIXES).map((s): Mutation => ({
  label: `path suffix ${JSON.stringify(s)}`,
  apply: (d) => note(d, `path suffix ${JSON.stringify(s)}`, { pathSuffix: d.pathSuffix + s }),
}));

const INSERTS = ['', '.', 'x/..', '%2e', '%2E%2E', 'X;y', '%2F', '..'];
const pathInsert = fc.record({ at: fc.nat({ max: 8 }), what: fc.constantFrom(...INSERTS) }).map(({ at, what }): Mutation => ({
  label: `insert segment ${JSON.stringify(what)} at ${at}`,
  apply: (d) => {
    const i = at % (d.segs.length + 1);
    return note(d, `insert ${JSON.stringify(`/${what}`)} before segment ${i}`, {
      segs: [...d.segs.slice(0, i), what, ...d.segs.slice(i)],
      baseLen: i <= d.baseLen ? d.baseLen + 1 : d.baseLen,
    });
  },
}));

/** A v1.0 `/{tenant}` prefix (or another one when there is one). */
const tenantPrefix = fc.constantFrom(...TENANTS.filter((t) => t !== '')).map((t): Mutation => ({
  label: `tenant prefix /${t}`,
  apply: (d) =>
    d.binding !== 'rest' ? undefined : note(d, `tenant path segment /${t}`, { segs: [...d.segs.slice(0, d.baseLen), enc(t), ...d.segs.slice(d.baseLen)] }),
}));

/** Query parameters: tenant (agreeing or not), repeats, odd spellings. */
const QUERIES: ReadonlyArray<ReadonlyArray<readonly [string, string]>> = [
  [['tenant', 'acme']],
  [['tenant', 'other']],
  [['tenant', '']],
  [
    ['tenant', 'acme'],
    ['tenant', 'other'],
  ],
  [['%74enant', 'other']],
  [
    ['historyLength', '1'],
    ['historyLength', '5'],
  ],
  [['historyLength', '1e1']],
  [
    ['contextId', 'c-1'],
    ['contextId', 'c-2'],
  ],
  [['x', '1']],
];
const query = fc.constantFrom(...QUERIES).map((q): Mutation => ({
  label: `query ${q.map(([k, v]) => `${k}=${v}`).join('&')}`,
  apply: (d) => note(d, `query ${q.map(([k, v]) => `${k}=${v}`).join('&')}`, { query: [...d.query, ...q] }),
}));

/* --- JSON body tricks --- */

const NAME_PATHS: ReadonlyArray<readonly Step[]> = [
  ['method'],
  ['params'],
  ['id'],
  ['jsonrpc'],
  ['params', 'id'],
  ['params', 'message'],
  ['params', 'message', 'parts', 0, 'text'],
  ['params', 'tenant'],
  ['params', 'message', 'taskId'],
  ['params', 'taskId'],
  ['params', 'url'],
  ['params', 'pushNotificationConfig', 'url'],
  ['message'],
  ['message', 'parts', 0, 'text'],
  ['message', 'content', 0, 'text'],
  ['tenant'],
  ['url'],
  ['name'],
  ['message', 'taskId'],
  ['pushNotificationConfig', 'url'],
];
const DECOYS = ['tasks/get', 'message/send', 'GetTask', 'molotov', 'other', 't-decoy', 'http://169.254.169.254/', 'tasks/t-decoy/pushNotificationConfigs/c'];

const dupKey = fc
  .record({ path: fc.constantFrom(...NAME_PATHS), decoy: fc.constantFrom(...DECOYS), after: fc.boolean() })
  .map(({ path, decoy, after }): Mutation => ({
    label: `duplicate ${path.join('.')} = ${JSON.stringify(decoy)} ${after ? 'after' : 'before'}`,
    apply: (d) => {
      if (d.json === undefined) return undefined;
      const j = updateMembers(d.json, path, (m, name) => {
        const i = m.map(([k]) => k).lastIndexOf(name);
        const extra = [name, toJ(decoy)] as const;
        return after ? [...m.slice(0, i + 1), extra, ...m.slice(i + 1)] : [...m.slice(0, i), extra, ...m.slice(i)];
      });
      return j === undefined
        ? undefined
        : note(d, `duplicate member ${path.join('.')}: ${JSON.stringify(decoy)} ${after ? 'after' : 'before'} the real one`, { json: j });
    },
  }));

/** Other spellings of a member name: case-folded, snake_case, with a NUL or space. */
function spell(name: string, how: string): string {
  switch (how) {
    case 'Title':
      return name.charAt(0).toUpperCase() + name.slice(1);
    case 'UPPER':
      return name.toUpperCase();
    case 'snake':
      return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    case 'long-s':
      return name.replace(/s/, '\u017f');
    case 'kelvin':
      return name.replace(/k/, '\u212a');
    case 'space':
      return `${name} `;
    default:
      return `${name}\u0000`;
  }
}
const respell = fc
  .record({
    path: fc.constantFrom(...NAME_PATHS),
    how: fc.constantFrom('snake', 'Title', 'UPPER', 'long-s', 'kelvin', 'space', 'nul'),
    mode: fc.constantFrom('rename', 'twin'),
    decoy: fc.constantFrom(...DECOYS),
  })
  .map(({ path, how, mode, decoy }): Mutation => ({
    label: `${mode} ${path.join('.')} as ${how}`,
    apply: (d) => {
      if (d.json === undefined) return undefined;
      const j = updateMembers(d.json, path, (m, name) => {
        const other = spell(name, how);
        if (other === name) return undefined;
        return mode === 'rename' ? m.map(([k, v]) => [k === name ? other : k, v] as const) : [...m, [other, toJ(decoy)] as const];
      });
      if (j === undefined) return undefined;
      const other = spell(String(path[path.length - 1]), how);
      return note(
        d,
        mode === 'rename'
          ? `member ${path.join('.')} spelled ${JSON.stringify(other)}`
          : `extra member ${JSON.stringify(other)}: ${JSON.stringify(decoy)} next to ${path.join('.')}`,
        { json: j },
      );
    },
  }));

/** Fields of the other binding or version carrying other content (v0.3 REST reads `content` and `request`). */
const foreignField = fc
  .constantFrom(
    ['params', 'message', 'content'] as const,
    ['params', 'request'] as const,
    ['message', 'parts'] as const,
    ['request'] as const,
    ['params', 'message', 'kind'] as const,
  )
  .map((where): Mutation => ({
    label: `foreign field ${where.join('.')}`,
    apply: (d) => {
      if (d.json === undefined) return undefined;
      const parent = where.slice(0, -1);
      const name = where[where.length - 1] as string;
      const value =
        name === 'kind'
          ? toJ('message')
          : name === 'request'
            ? toJ({ messageId: 'm-decoy', role: 'ROLE_USER', content: [{ text: 'molotov' }], parts: [{ kind: 'text', text: 'molotov' }] })
            : toJ([{ text: 'molotov' }]);
      const j =
        parent.length === 0
          ? d.json.t === 'o' && !d.json.m.some(([k]) => k === name)
            ? { t: 'o' as const, m: [...d.json.m, [name, value] as const] }
            : undefined
          : updateAt(d.json, parent, (o) => (o.t === 'o' && !o.m.some(([k]) => k === name) ? { t: 'o', m: [...o.m, [name, value] as const] } : o));
      return j === undefined || j === d.json
        ? undefined
        : note(d, `added ${where.join('.')} = ${emitJ(value, { escape: 'none', space: 'none' })}`, { json: j });
    },
  }));

const ID_FORMS = ['1.0', '1e0', '-0', '{}', '[1]', 'true', '"1"', '9007199254740993', 'absent'];
const idForm = fc.constantFrom(...ID_FORMS).map((raw): Mutation => ({
  label: `id ${raw}`,
  apply: (d) => {
    if (d.json === undefined || d.json.t !== 'o' || !d.json.m.some(([k]) => k === 'id') || d.binding !== 'jsonrpc') return undefined;
    const node: J =
      raw === '{}'
        ? { t: 'o', m: [] }
        : raw === '[1]'
          ? { t: 'a', v: [{ t: 'n', raw: '1' }] }
          : raw === 'true'
            ? { t: 'lit', raw: 'true' }
            : raw.startsWith('"')
              ? { t: 's', v: '1' }
              : { t: 'n', raw };
    const m = raw === 'absent' ? d.json.m.filter(([k]) => k !== 'id') : d.json.m.map(([k, v]) => [k, k === 'id' ? node : v] as const);
    return note(d, raw === 'absent' ? 'no JSON-RPC id' : `JSON-RPC id written ${raw}`, { json: { t: 'o', m } });
  },
}));

const bodyTenant = fc
  .record({ value: fc.constantFrom('acme', 'other', '', 'v1'), where: fc.constantFrom('params', 'body') })
  .map(({ value, where }): Mutation => ({
    label: `${where}.tenant = ${JSON.stringify(value)}`,
    apply: (d) => {
      if (d.json === undefined) return undefined;
      const set = (o: J): J => (o.t === 'o' ? { t: 'o', m: [...o.m.filter(([k]) => k !== 'tenant'), ['tenant', toJ(value)] as const] } : o);
      const j = where === 'params' ? updateAt(d.json, ['params'], set) : d.binding === 'rest' ? set(d.json) : undefined;
      return j === undefined ? undefined : note(d, `${where === 'params' ? 'params' : 'body'}.tenant ${JSON.stringify(value)}`, { json: j });
    },
  }));

const METHOD_NAMES = [
  'message/send',
  'SendMessage',
  'tasks/get',
  'GetTask',
  'tasks/cancel',
  'CancelTask',
  'agent/getAuthenticatedExtendedCard',
  'GetExtendedAgentCard',
  'ListTasks',
  'tasks/list',
  'Message/Send',
  'message/send ',
  ' message/send',
  'message/send\u0000',
  'sendMessage',
  'SENDMESSAGE',
  'message.send',
  'messages/send',
  'tasks/get/',
  'GetTask ',
  'tasks/pushNotificationConfig/set',
  'CreateTaskPushNotificationConfig',
  'foo/bar',
  'ping',
  '',
  'rpc.discover',
];
const methodName = fc.constantFrom(...METHOD_NAMES).map((name): Mutation => ({
  label: `method ${JSON.stringify(name)}`,
  apply: (d) => {
    if (d.json === undefined) return undefined;
    const j = updateAt(d.json, ['method'], () => toJ(name));
    return j === undefined ? undefined : note(d, `method ${JSON.stringify(name)}`, { json: j });
  },
}));

const jsonStyle = fc
  .record({
    escape: fc.constantFrom('none' as const, 'letters' as const, 'slash' as const),
    space: fc.constantFrom('none' as const, 'pretty' as const, 'odd' as const),
    bom: fc.boolean(),
  })
  .map(({ escape, space, bom }): Mutation => ({
    label: `json escape=${escape} space=${space}${bom ? ' BOM' : ''}`,
    apply: (d) =>
      d.json === undefined
        ? undefined
        : note(d, `JSON written with escapes=${escape}, whitespace=${space}${bom ? ', BOM first' : ''}`, { style: { escape, space }, bom }),
  }));

const RAW_BODIES = [
  '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-1"},}',
  '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-1"}} x',
  '[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-1"}}]',
  'null',
  '"str"',
  '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t-1"}}\u0000',
];
const rawBody = fc.constantFrom(...RAW_BODIES).map((b): Mutation => ({
  label: `raw body ${JSON.stringify(b)}`,
  apply: (d) => note(d, `raw body ${JSON.stringify(b)}`, { rawBody: b, mediaType: d.mediaType ?? 'application/json' }),
}));

const paramsShape = fc.constantFrom('null', 'array', 'absent', 'string').map((shape): Mutation => ({
  label: `params ${shape}`,
  apply: (d) => {
    if (d.json === undefined || d.json.t !== 'o' || d.binding !== 'jsonrpc') return undefined;
    const node: J | undefined =
      shape === 'null' ? { t: 'lit', raw: 'null' } : shape === 'array' ? { t: 'a', v: [] } : shape === 'string' ? { t: 's', v: 'x' } : undefined;
    const m = d.json.m.filter(([k]) => k !== 'params');
    return note(d, `params ${shape}`, { json: { t: 'o', m: node === undefined ? m : [...m, ['params', node] as const] } });
  },
}));

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: versionHeader, weight: 4 },
  { arbitrary: versionQuery, weight: 1 },
  { arbitrary: contentType, weight: 3 },
  { arbitrary: charset, weight: 4 },
  { arbitrary: contentEncoding, weight: 3 },
  { arbitrary: framing, weight: 2 },
  { arbitrary: connection, weight: 3 },
  { arbitrary: methodOverride, weight: 2 },
  { arbitrary: ownedHeader, weight: 1 },
  { arbitrary: verb, weight: 3 },
  { arbitrary: encodeChar, weight: 4 },
  { arbitrary: caseChange, weight: 3 },
  { arbitrary: pathSuffix, weight: 3 },
  { arbitrary: pathInsert, weight: 2 },
  { arbitrary: tenantPrefix, weight: 2 },
  { arbitrary: query, weight: 2 },
  { arbitrary: dupKey, weight: 3 },
  { arbitrary: respell, weight: 4 },
  { arbitrary: foreignField, weight: 2 },
  { arbitrary: idForm, weight: 1 },
  { arbitrary: bodyTenant, weight: 2 },
  { arbitrary: methodName, weight: 4 },
  { arbitrary: jsonStyle, weight: 3 },
  { arbitrary: rawBody, weight: 1 },
  { arbitrary: paramsShape, weight: 1 },
);

/* ------------------------------------------------------------------------------------------ */
/* Rendering                                                                                  */
/* ------------------------------------------------------------------------------------------ */

export interface Case {
  readonly family: Family;
  readonly op: OpKey;
  /** What was bent, in order. */
  readonly notes: readonly string[];
  readonly wire: WireRequest;
  /** The JSON-RPC id the caller sent, when the body is a JSON-RPC request with a valid one. */
  readonly rpcId: number | string | null | undefined;
  /** Whether the body (as written, before charset and content coding) is JSON-RPC-like: an object with "method" or "jsonrpc", or a batch of them. */
  readonly jsonRpcBody: boolean;
  /** Verb and path are the real call's: no mutation touched the request line's method or path. */
  readonly pathIntact: boolean;
}

function chunk(body: Buffer, ext: boolean, upper: boolean): Buffer {
  const parts: Buffer[] = [];
  const size = Math.max(1, Math.ceil(body.length / 3));
  for (let i = 0; i < body.length; i += size) {
    const c = body.subarray(i, i + size);
    const n = upper ? c.length.toString(16).toUpperCase() : c.length.toString(16);
    parts.push(Buffer.from(`${n}${ext ? ';ext=1' : ''}\r\n`, 'latin1'), c, Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

export function render(d: Draft, b: Base, hostPort: string): Case {
  let body: Buffer = Buffer.alloc(0);
  let parsed: unknown;
  if (d.rawBody !== undefined || d.json !== undefined) {
    const text = d.rawBody ?? emitJ(d.json as J, d.style);
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    body = encodeText((d.bom ? '\uFEFF' : '') + text, d.encoding);
    for (const c of d.codings) body = compress(body, c);
  }
  const path = `/${d.segs.join('/')}${d.pathSuffix}`;
  const target = d.query.length === 0 ? path : `${path}${path.includes('?') ? '&' : '?'}${d.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
  const headers: Array<readonly [string, string]> = [['Host', hostPort], ...d.headers];
  if (d.mediaType !== undefined) headers.push(['Content-Type', `${d.mediaType}${d.ctParams}`]);
  if (d.codings.length > 0) {
    if (d.codingLines === 'each') for (const c of d.codings) headers.push(['Content-Encoding', c]);
    else headers.push(['Content-Encoding', d.codings.join(', ')]);
  }
  const hasBody = body.length > 0 || d.verb === 'POST' || d.verb === 'PUT' || d.verb === 'PATCH';
  let wireBody: Buffer = body;
  switch (d.framing) {
    case 'length':
      if (hasBody) headers.push(['Content-Length', String(body.length)]);
      break;
    case 'chunked':
    case 'chunked-ext':
    case 'chunked-case':
      headers.push(['Transfer-Encoding', d.framing === 'chunked-case' ? 'Chunked' : 'chunked']);
      wireBody = chunk(body, d.framing === 'chunked-ext', d.framing === 'chunked-case');
      break;
    case 'te-gzip-chunked':
      headers.push(['Transfer-Encoding', 'gzip, chunked']);
      wireBody = chunk(zlib.gzipSync(body), false, false);
      break;
    case 'both':
      headers.push(['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']);
      wireBody = chunk(body, false, false);
      break;
    case 'none':
      break;
  }
  const p = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  const rpcLike = (x: unknown): boolean => typeof x === 'object' && x !== null && !Array.isArray(x) && ('method' in x || 'jsonrpc' in x);
  const id = p?.['id'];
  return {
    family: b.family,
    op: b.op,
    notes: d.notes,
    wire: { verb: d.verb, target, headers, body: wireBody },
    rpcId: typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) || id === null ? id : undefined,
    jsonRpcBody: rpcLike(parsed) || (Array.isArray(parsed) && parsed.some(rpcLike)),
    pathIntact: true,
  };
}

/** A readable form of a case: what was bent, then the exact request (body escaped, cut at 700 characters). */
export function describeCase(c: Case): string {
  const head = [`${c.wire.verb} ${c.wire.target} HTTP/1.1`, ...c.wire.headers.map(([k, v]) => `${k}: ${v}`)].join('\n    ');
  const printable = c.wire.body.toString('latin1');
  const body = /^[\x20-\x7e\r\n\t]*$/.test(printable) ? printable : JSON.stringify(printable);
  return [
    `  ${c.family === 'card' ? 'card read' : `${c.family} ${c.op}`}${c.notes.length > 0 ? `; ${c.notes.join('; ')}` : ' (no mutation)'}`,
    `    ${head}`,
    ...(c.wire.body.length > 0 ? [`    <body ${c.wire.body.length} bytes> ${body.length > 700 ? `${body.slice(0, 700)}...` : body}`] : []),
  ].join('\n');
}

/** A generated case: a real call and up to `maxMutations` mutations, rendered for `hostPort`. */
export function caseArb(hostPort: () => string, maxMutations = 4): fc.Arbitrary<Case> {
  return fc.record({ base: baseArb, mutations: fc.array(mutationArb, { maxLength: maxMutations }) }).map(({ base, mutations }) => {
    const d0 = draftOf(base);
    let d = d0;
    for (const m of mutations) d = m.apply(d) ?? d;
    const intact = d.verb === d0.verb && d.pathSuffix === '' && d.segs.join('/') === d0.segs.join('/');
    const c = { ...render(d, base, hostPort()), pathIntact: intact };
    return Object.assign(c, { [fc.toStringMethod]: () => describeCase(c) });
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Requests the SDK agent itself refuses (standard codes)                                     */
/* ------------------------------------------------------------------------------------------ */

/** Clean requests with exactly one defect the binding has a standard answer for. */
export interface Defect extends Case {
  readonly binding: 'jsonrpc' | 'rest';
  readonly defect: string;
  /** No A2A call can be read out of it (bad JSON, invalid request, no A2A method, no route): only the proxy itself may answer. */
  readonly unjudgeable: boolean;
}

const PARSE_BODIES = [
  '{',
  '{"jsonrpc":"2.0",',
  'not json',
  '{"a":1,}',
  '[1,',
  '{"jsonrpc":"2.0","method":"message/send","id":1',
  "{'jsonrpc':'2.0'}",
  '"str"',
  '123',
  'null',
  'true',
  '{"jsonrpc":"2.0" "id":1}',
];
const INVALID_REQUESTS: readonly unknown[] = [
  { method: 'message/send', id: 1, params: {} },
  { jsonrpc: '1.0', method: 'message/send', id: 1, params: {} },
  { jsonrpc: 2.0, method: 'tasks/get', id: 1, params: { id: 'x' } },
  { jsonrpc: '2.0', id: 1 },
  { jsonrpc: '2.0', method: 5, id: 1 },
  { jsonrpc: '2.0', method: '', id: 1 },
  { jsonrpc: '2.0', method: 'tasks/get', id: {}, params: { id: 'x' } },
  { jsonrpc: '2.0', method: 'tasks/get', id: 1.5, params: { id: 'x' } },
  { jsonrpc: '2.0', method: 'tasks/get', id: true, params: { id: 'x' } },
  { jsonrpc: '2.0', method: null, id: 1 },
  {},
];
const UNKNOWN_METHODS = [
  'foo/bar',
  'tasks/list',
  'ListTasks',
  'SendMessage',
  'message/send',
  'Message/Send',
  'message/send ',
  'ping',
  'agent/getCard',
  'tasks/pushNotificationConfig/update',
  'GetTaskPushNotificationConfigs',
  'rpc.discover',
];
const BAD_TYPES = [
  'text/plain',
  'application/a2a+json',
  'application/xml',
  'application/x-www-form-urlencoded',
  'text/json',
  'application/jsonx',
  'multipart/form-data; boundary=x',
];
const BAD_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/foo'],
  ['POST', '/message:sendx'],
  ['POST', '/message:foo'],
  ['GET', '/tasks/t-1/foo'],
  ['PUT', '/tasks/t-1'],
  ['GET', '/message:send'],
  ['POST', '/v1/foo'],
  ['GET', '/v1/message:send'],
  ['PATCH', '/tasks/t-1:cancel'],
  ['GET', '/a/b/c/d/e/f'],
  ['DELETE', '/tasks/t-1'],
  ['POST', '/tasks/t-1:archive'],
  ['GET', '/v1/tasks/t-1/foo'],
];

const versionHeaders = (v: string | undefined): Array<[string, string]> => (v === undefined ? [] : [['A2A-Version', v]]);

function defectCase(
  binding: 'jsonrpc' | 'rest',
  defect: string,
  unjudgeable: boolean,
  d: Omit<Draft, 'notes' | 'pathSuffix' | 'ctParams' | 'style' | 'bom' | 'encoding' | 'codings' | 'codingLines' | 'framing' | 'baseLen' | 'binding'>,
): Defect {
  const draft: Draft = {
    ...d,
    binding,
    baseLen: 2,
    notes: [defect],
    pathSuffix: '',
    ctParams: '',
    style: { escape: 'none', space: 'none' },
    bom: false,
    encoding: 'utf8',
    codings: [],
    codingLines: 'one',
    framing: 'length',
  };
  const base: Base = {
    family: binding === 'jsonrpc' ? 'jsonrpc-1.0' : 'rest-1.0',
    op: 'send',
    task: 't-',
    config: 'cfg-',
    context: '',
    tenant: '',
    text: 'hello',
    url: URLS[0] as string,
    nonce: 0,
    rpcId: 1,
    followUp: false,
    subscribeVerb: 'POST',
    cardPath: CARD_PATHS[0] as string,
  };
  const c = render(draft, base, '127.0.0.1');
  const out: Defect = { ...c, binding, defect, unjudgeable };
  return Object.assign(out, { [fc.toStringMethod]: () => `  ${binding} defect: ${defect}\n${describeCase(c).split('\n').slice(1).join('\n')}` });
}

const sendV = (v: string | undefined): Record<string, unknown> =>
  v === '1.0'
    ? { jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hello' }] } } }
    : {
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
      };

export const defectArb: fc.Arbitrary<Defect> = fc
  .record({
    v: fc.constantFrom<string | undefined>(undefined, '1.0', '0.3'),
    kind: fc.constantFrom('rpc-parse', 'rpc-invalid', 'rpc-method', 'rpc-ctype', 'rest-route', 'rest-parse', 'rest-ctype'),
    parse: fc.constantFrom(...PARSE_BODIES),
    invalid: fc.constantFrom(...INVALID_REQUESTS),
    method: fc.constantFrom(...UNKNOWN_METHODS),
    type: fc.constantFrom(...BAD_TYPES),
    route: fc.constantFrom(...BAD_ROUTES),
    legacyPath: fc.boolean(),
  })
  .map(({ v, kind, parse, invalid, method, type, route, legacyPath }): Defect => {
    const headers = [...versionHeaders(v), ['Accept', 'application/json'] as [string, string]];
    const rpc = { verb: 'POST', segs: ['a2a', 'jsonrpc'], query: [], headers, json: undefined, rawBody: undefined, mediaType: 'application/json' };
    const restSend = legacyPath ? ['a2a', 'rest', 'v1', 'message:send'] : ['a2a', 'rest', 'message:send'];
    const restBody = legacyPath
      ? { message: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'hello' }] } }
      : { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hello' }] } };
    const tag = `A2A-Version ${v ?? '(none)'}`;
    switch (kind) {
      case 'rpc-parse':
        return defectCase('jsonrpc', `malformed JSON ${JSON.stringify(parse)}; ${tag}`, true, { ...rpc, rawBody: parse });
      case 'rpc-invalid':
        return defectCase('jsonrpc', `invalid JSON-RPC request ${JSON.stringify(invalid)}; ${tag}`, true, { ...rpc, json: toJ(invalid) });
      case 'rpc-method':
        return defectCase('jsonrpc', `method ${JSON.stringify(method)}; ${tag}`, V1_METHODS[method] === undefined && V03_METHODS[method] === undefined, {
          ...rpc,
          json: toJ({ ...sendV(v), method }),
        });
      case 'rpc-ctype':
        return defectCase('jsonrpc', `Content-Type ${type}; ${tag}`, false, { ...rpc, mediaType: type, json: toJ(sendV(v)) });
      case 'rest-route': {
        const [verbName, path] = route;
        return defectCase('rest', `no such route ${verbName} ${path}; ${tag}`, true, {
          verb: verbName,
          segs: ['a2a', 'rest', ...path.split('/').filter((x) => x !== '')],
          query: [],
          headers,
          json: undefined,
          rawBody: undefined,
          mediaType: undefined,
        });
      }
      case 'rest-parse':
        return defectCase('rest', `malformed JSON ${JSON.stringify(parse)} on ${restSend.slice(2).join('/')}; ${tag}`, true, {
          verb: 'POST',
          segs: restSend,
          query: [],
          headers,
          json: undefined,
          rawBody: parse,
          mediaType: 'application/json',
        });
      case 'rest-ctype':
        return defectCase('rest', `Content-Type ${type} on ${restSend.slice(2).join('/')}; ${tag}`, false, {
          verb: 'POST',
          segs: restSend,
          query: [],
          headers,
          json: toJ(restBody),
          rawBody: undefined,
          mediaType: type,
        });
    }
    throw new Error(`unknown defect kind ${kind}`);
  });

/* ------------------------------------------------------------------------------------------ */
/* Hand-written cases                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** A base call with plain defaults (v0.3 JSON-RPC message/send), for hand-written cases. */
export function baseOf(p: Partial<Base> = {}): Base {
  return {
    family: 'jsonrpc-0.3',
    op: 'send',
    task: 't-',
    config: 'cfg-',
    context: 'c-',
    tenant: '',
    text: 'hello',
    url: URLS[0] as string,
    nonce: 1,
    rpcId: 1,
    followUp: false,
    subscribeVerb: 'POST',
    cardPath: CARD_PATHS[0] as string,
    ...p,
  };
}

/** A hand-written case: a base call, then a patch of its draft (described by `what`). */
export function handCase(what: string, base: Partial<Base>, patch: (d: Draft) => Partial<Draft>, hostPort = '127.0.0.1'): Case {
  const b = baseOf(base);
  const d = draftOf(b);
  const c = render({ ...d, ...patch(d), notes: [what] }, b, hostPort);
  return Object.assign(c, { [fc.toStringMethod]: () => describeCase(c) });
}
