/**
 * The classifier as it is against the classifier as it was (test/helpers/classify-reference/, a
 * verbatim copy of src/a2a/{classify,target,rest}.ts before they were made cheaper per call): the
 * same refusal with the same error, or the same result, for every request. Requests are real A2A
 * calls bent every way test/helpers/a2a-variants.ts knows, and hostile ones built here: duplicate
 * and case- or separator-folded member names in any escape spelling, nesting at the depth bound and
 * past it (brackets and escaped quotes inside strings too), bodies over the value bound, odd header
 * spellings and values, encoded and dotted paths, repeated and contradicting query parameters.
 */
import fc from 'fast-check';
import type { IncomingHttpHeaders } from 'node:http';
import { ambiguousKey, classify, type Classified, type ClassifyOptions, type HttpRequestFacts } from '../../../src/a2a/classify';
import { fieldKey } from '../../../src/core/json';
import { isLegacyVersion, looksLikeRest, matchRest } from '../../../src/a2a/rest';
import { encodeParsedPath, encodePath, parseTarget } from '../../../src/a2a/target';
import { NO_ENDPOINTS } from '../../../src/a2a/endpoints';
import * as ref from '../../helpers/classify-reference/classify';
import * as refRest from '../../helpers/classify-reference/rest';
import * as refTarget from '../../helpers/classify-reference/target';
import { caseArb, emitJ, toJ, type J } from '../../helpers/a2a-variants';
import { A2A_OPTIONS, FORWARD_OPTIONS, classifyOptions } from '../../helpers/classify';

const OPTION_SETS: readonly ClassifyOptions[] = [
  A2A_OPTIONS,
  FORWARD_OPTIONS,
  classifyOptions({ passthrough: [['admin'], ['a2a'], ['static', 'v2']] }),
  classifyOptions({ passthrough: [[]], forwardNonA2A: true }),
  { endpoints: NO_ENDPOINTS, cardKnown: false, passthrough: [], forwardNonA2A: false },
  // Nested REST bases (the longest is tried first), in either order, and a JSON-RPC endpoint with the card's query.
  {
    endpoints: { rest: [['a2a'], ['a2a', 'rest'], ['A2A', 'REST', 'v1']], jsonrpc: [['a2a', 'jsonrpc'], ['rpc']], jsonrpcQueries: ['?code=abc'] },
    cardKnown: true,
    passthrough: [['pub']],
    forwardNonA2A: false,
  },
  { endpoints: { rest: [['a2a', 'rest'], ['a2a'], ['x']], jsonrpc: [['a2a', 'rest']] }, cardKnown: true, passthrough: [], forwardNonA2A: true },
];
const options = fc.constantFrom(...OPTION_SETS);

/** A REST call's minted id differs from run to run: the one difference allowed, once both are seen to be minted. */
function comparable(c: Classified): unknown {
  // (A forwarded body as text: jest compares a Buffer byte by byte, slowly for the 200 KB bodies below.)
  if (c.kind === 'other') return { ...c, body: c.body === null ? null : `${Buffer.isBuffer(c.body)} ${c.body.toString('latin1')}` };
  if (c.kind !== 'a2a' || c.binding !== 'rest') return c;
  expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(c.request.id).toBe(c.id);
  return { ...c, id: 'minted', request: { ...c.request, id: 'minted' } };
}

/** Member order is part of the result: a canonical request is forwarded byte for byte. */
function order(c: Classified): string {
  if (c.kind !== 'a2a') return '';
  return JSON.stringify([Object.keys(c.request), c.rest === undefined ? [] : Object.keys(c.rest.match.pathParams)]);
}

/** The one change since the reference: the 404 of an unlisted card-like path names CARD_PATHS (it named PASSTHROUGH_PATHS). */
function cardPathHint(now: Classified, was: Classified): Classified {
  if (now.kind !== 'reject' || now.error.kind !== 'notFound' || !now.error.message.includes('CARD_PATHS')) return now;
  expect(was).toMatchObject({ kind: 'reject', error: { kind: 'notFound', message: 'Not an A2A endpoint; other routes must be listed in PASSTHROUGH_PATHS' } });
  return was;
}

function same(req: HttpRequestFacts, opts: ClassifyOptions): void {
  const now = cardPathHint(classify(req, opts), ref.classify(req, opts));
  const was = ref.classify(req, opts);
  const label = `${req.verb} ${JSON.stringify(req.path)} ${JSON.stringify(req.headers)} ${req.body === null ? 'null' : JSON.stringify(req.body.toString('latin1').slice(0, 300))}`;
  expect([label, comparable(now)]).toStrictEqual([label, comparable(was)]);
  expect([label, order(now)]).toEqual([label, order(was)]);
}

// ---- requests from the variant generator (real calls, bent) ----

/** Header lines as node's parser hands them over: lower-case names, a repeat of a singleton dropped, others joined. */
function nodeHeaders(lines: ReadonlyArray<readonly [string, string]>): IncomingHttpHeaders {
  const singletons = new Set(['content-type', 'content-length', 'host', 'authorization', 'user-agent']);
  const h: Record<string, string> = {};
  for (const [k, v] of lines) {
    const n = k.toLowerCase();
    if (h[n] === undefined) h[n] = v;
    else if (!singletons.has(n)) h[n] = `${h[n]}, ${v}`;
  }
  return h;
}

describe('classify against its reference copy', () => {
  test('real A2A calls of every family and operation, with up to six mutations', () => {
    fc.assert(
      fc.property(
        caseArb(() => '127.0.0.1:4000', 6),
        options,
        (c, opts) => {
          same({ verb: c.wire.verb, path: c.wire.target, headers: nodeHeaders(c.wire.headers), body: c.wire.body.length === 0 ? null : c.wire.body }, opts);
        },
      ),
      { numRuns: 6_000 },
    );
  });

  // ---- hostile requests built here ----

  /** A member name in one of the spellings some decoder folds onto it. */
  const spelling = (name: string): fc.Arbitrary<string> =>
    fc.constantFrom(
      name,
      name.toUpperCase(),
      (name[0] ?? '').toUpperCase() + name.slice(1),
      name.replace(/([A-Z])/g, '_$1').toLowerCase(),
      name.replace(/([A-Z])/g, '-$1'),
      name.replace(/s/g, 'ſ'),
      name.replace(/k/g, '\u212a'),
      `${name}_`,
      `_${name}`,
      `${name} `,
      name.replace(/i/g, 'İ'),
    );
  /** Escape styles: none, every letter as \u00XX, "/" as "\/". */
  const style = fc.record({
    escape: fc.constantFrom('none' as const, 'letters' as const, 'slash' as const),
    space: fc.constantFrom('none' as const, 'pretty' as const, 'odd' as const),
  });

  const leaf: fc.Arbitrary<J> = fc.oneof(
    fc.constantFrom<J>(
      { t: 's', v: 'x' },
      { t: 's', v: 'a"{[' },
      { t: 's', v: '\\' },
      { t: 's', v: '\\"}]' },
      { t: 'n', raw: '1' },
      { t: 'n', raw: '1.5' },
      { t: 'n', raw: '-0' },
      { t: 'lit', raw: 'null' },
      { t: 'lit', raw: 'true' },
    ),
    fc.string({ maxLength: 6 }).map((v): J => ({ t: 's', v })),
  );
  const memberName = fc.oneof(
    fc
      .constantFrom(
        'messageId',
        'taskId',
        'contextId',
        'parts',
        'content',
        'text',
        'role',
        'id',
        'tenant',
        'name',
        'url',
        'historyLength',
        'message',
        'metadata',
      )
      .chain(spelling),
    fc.string({ maxLength: 5 }),
    fc.constant(''),
  );
  const value: fc.Arbitrary<J> = fc.letrec<{ v: J }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(fc.tuple(memberName, tie('v')), { maxLength: 5 }).map((m): J => ({ t: 'o', m })),
      fc.array(tie('v'), { maxLength: 3 }).map((v): J => ({ t: 'a', v })),
    ),
  })).v;
  /** A message in either version's shape, its members maybe repeated or refolded. */
  const message = fc.tuple(fc.array(fc.tuple(memberName, value), { maxLength: 3 }), fc.boolean(), fc.boolean()).map(([extra, parts, early]): J => {
    const base: Array<readonly [string, J]> = [
      ['messageId', { t: 's', v: 'm-1' }],
      ['role', { t: 's', v: 'ROLE_USER' }],
      [parts ? 'parts' : 'content', toJ([{ text: 'hello' }])],
    ];
    return { t: 'o', m: early ? [...extra, ...base] : [...base, ...extra] };
  });
  const params = fc.oneof(
    fc.tuple(message, fc.array(fc.tuple(memberName, value), { maxLength: 3 })).map(([m, more]): J => ({ t: 'o', m: [['message', m], ...more] })),
    fc.array(fc.tuple(memberName, value), { maxLength: 4 }).map((m): J => ({ t: 'o', m })),
    value,
  );
  const method = fc.oneof(
    fc.constantFrom(
      'SendMessage',
      'message/send',
      'GetTask',
      'tasks/get',
      'ListTasks',
      'CancelTask',
      'GetExtendedAgentCard',
      'agent/getAuthenticatedExtendedCard',
      'SubscribeToTask',
    ),
    fc.constantFrom('sendmessage', 'Message/Send', ' message/send', 'custom/thing', '', 'ping'),
  );
  /** A JSON-RPC envelope whose members may be missing, repeated, refolded, reordered or of another type. */
  const envelope = fc
    .tuple(
      fc.shuffledSubarray(['jsonrpc', 'id', 'method', 'params'] as const),
      fc.constantFrom<J>({ t: 's', v: '2.0' }, { t: 's', v: '1.0' }, { t: 'n', raw: '2.0' }),
      fc.constantFrom<J>(
        { t: 'n', raw: '1' },
        { t: 's', v: 'req-1' },
        { t: 'lit', raw: 'null' },
        { t: 'n', raw: '1.5' },
        { t: 'n', raw: '1e400' },
        { t: 'o', m: [] },
      ),
      method,
      params,
      fc.array(fc.tuple(fc.constantFrom('jsonrpc', 'id', 'method', 'params', 'extra').chain(spelling), value), { maxLength: 2 }),
      fc.boolean(),
    )
    .map(([keys, jsonrpc, id, m, p, extra, extraFirst]): J => {
      const vals: Record<string, J> = { jsonrpc, id, method: { t: 's', v: m }, params: p };
      const members: Array<readonly [string, J]> = keys.map((k) => [k, vals[k] as J]);
      return { t: 'o', m: extraFirst ? [...extra, ...members] : [...members, ...extra] };
    });

  /** Nesting around the depth bound (64), with brackets and escaped quotes inside strings that must not count. */
  const deep = fc
    .tuple(
      fc.integer({ min: 55, max: 70 }),
      fc.constantFrom('[', '{"a":'),
      fc.constantFrom(
        '',
        '"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",',
        '"\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",',
        '"\\\\",',
      ),
      fc.boolean(),
    )
    .map(([n, open, inner, asParams]) => {
      const close = open === '[' ? ']' : '}';
      const core = `${open.repeat(n)}${inner}1${close.repeat(n)}`;
      return asParams ? `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${core}}}` : core;
    });

  const body: fc.Arbitrary<Buffer | null> = fc.oneof(
    { weight: 6, arbitrary: fc.tuple(envelope, style).map(([j, s]) => Buffer.from(emitJ(j, s), 'utf8')) },
    { weight: 3, arbitrary: fc.tuple(params, style).map(([j, s]) => Buffer.from(emitJ(j, s), 'utf8')) },
    { weight: 2, arbitrary: deep.map((s) => Buffer.from(s, 'utf8')) },
    { weight: 1, arbitrary: fc.constant(null) },
    // Bent bytes: cut, a byte spliced in (high bytes, NUL, quotes, backslashes, brackets), a BOM, UTF-16.
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          envelope,
          fc.nat(),
          fc.constantFrom(0x00, 0x22, 0x5c, 0x5b, 0x7b, 0x7d, 0x80, 0xc3, 0xff, 0xfe, 0xef),
          fc.constantFrom('cut', 'splice', 'bom', 'utf16', 'latin1'),
        )
        .map(([j, at, byte, how]) => {
          const text = emitJ(j, { escape: 'none', space: 'none' });
          const b = Buffer.from(text, 'utf8');
          const i = at % (b.length + 1);
          if (how === 'cut') return b.subarray(0, i);
          if (how === 'splice') return Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
          if (how === 'bom') return Buffer.from(`\uFEFF${text}`, 'utf8');
          return Buffer.from(`${text}é`, how === 'utf16' ? 'utf16le' : 'latin1');
        }),
    },
  );

  const segment = fc.oneof(
    fc.constantFrom(
      'a2a',
      'rest',
      'jsonrpc',
      'A2A',
      'REST',
      'v1',
      'tasks',
      'Tasks',
      'message:send',
      'MESSAGE:SEND',
      'message:stream',
      't-1',
      't-1:cancel',
      't-1:subscribe',
      'pushNotificationConfigs',
      'cfg',
      'extendedAgentCard',
      'card',
      '.well-known',
      'agent-card.json',
      'AGENT.JSON',
      'admin',
      'pub',
      'rpc',
      'x',
      'static',
      'v2',
    ),
    // gRPC method paths (gRPC-Web, Connect, Twirp) and Unicode case folds of route words, percent-encoded as sent.
    fc.constantFrom(
      'lf.a2a.v1.A2AService',
      'a2a.v1.a2aservice',
      'A2A%C5%BFervice',
      'A2AServ%C4%B1ce',
      'A2AServ%C4%B0ce',
      'SendMessage',
      'GETTASK',
      'TaskSubscription',
      'twirp',
      'ta%C5%BFks',
      'TA%C5%BFKS',
      'me%C5%BF%C5%BFage:send',
      't-1:%C5%BFubscribe',
      'pushNotificationConfig%C5%BF',
      'pushNot%C4%B0ficationConfigs',
    ),
    fc.constantFrom(
      '',
      '.',
      '..',
      '%2e',
      '%2E%2e',
      'a%2Fb',
      'a%5cb',
      '%25',
      '%2541',
      'a;b',
      'é',
      '%C3%A9',
      '%ff',
      'a$b',
      'a&b',
      'a+b',
      'a,b',
      'a=b',
      "a'b",
      'a@b',
      'a:b',
      '~x',
      'a b',
      '%3A',
      'a\\b',
      '#',
    ),
  );
  const query = fc.constantFrom(
    '',
    '?',
    '?A2A-Version=1.0',
    '?a2a-version=0.3',
    '?a2a-version=1.0&A2A-VERSION=0.3',
    '?a2a-version=%201.0',
    '?x=1&x=2',
    '?x=1&X=2',
    '?a_b=1&a-b=2',
    '?tenant=acme',
    '?historyLength=2&history_length=3',
    '?historyLength=2',
    '?code=abc',
    '?code=abc&a2a-version=1.0',
    '?%zz=1',
    '?x',
    '?x=+1',
    '?contextId=c&pageSize=5',
  );
  const path = fc.tuple(fc.array(segment, { maxLength: 6 }), fc.boolean(), query).map(([segs, slash, q]) => `/${segs.join('/')}${slash ? '/' : ''}${q}`);

  const verb = fc.constantFrom('POST', 'GET', 'HEAD', 'DELETE', 'PUT', 'post', 'Post', 'get', 'OPTIONS', 'PATCH');
  const headerName = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('content-type', 'a2a-version', 'content-length', 'host', 'accept', 'connection') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'a2a_version',
        'content_type',
        'content_length',
        'transfer_encoding',
        'x-http-method-override',
        'x-http-method',
        'x-method-override',
        'x_http_method_override',
        'content-encoding',
        'transfer-encoding',
        'x-a2a_version',
      ),
    },
  );
  const headerValue = fc.oneof(
    fc.constantFrom(
      'application/json',
      'Application/JSON',
      ' application/json ',
      'application/json; charset=utf-8',
      'application/json;charset="UTF8"',
      'application/json; charset=utf-7',
      'application/json; charset=utf-8; charset=latin1',
      'application/json;',
      'application/a2a+json',
      'application/a2a+json; charset=utf-16',
      'text/plain',
      'text/json',
      'application/jsonx',
    ),
    fc.constantFrom(
      '1.0',
      '0.3',
      ' 1.0 ',
      '1.0,0.3',
      '',
      '1.0\t',
      '1.0\u0001',
      '2.0',
      '1',
      '0.3.0',
      'keep-alive',
      'close, a2a-version',
      'Content-Type',
      'upgrade, X-Http-Method',
      'POST',
      '12',
    ),
    fc.string({ maxLength: 8 }),
  );
  const headers = fc
    .tuple(
      fc.dictionary(headerName, headerValue, { maxKeys: 4 }),
      fc.constantFrom<Record<string, string | string[]>>(
        {},
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json', 'a2a-version': '1.0' },
        { 'a2a-version': ['1.0', '1.0'] },
        { 'a2a-version': [] },
      ),
    )
    .map(([h, base]) => ({ ...base, ...h }) as IncomingHttpHeaders);

  test('hostile requests: folded and escaped duplicate members, deep nesting, odd headers, encoded paths', () => {
    fc.assert(
      fc.property(verb, path, headers, body, options, (v, p, h, b, opts) => {
        same({ verb: v, path: p, headers: h, body: b }, opts);
      }),
      { numRuns: 12_000 },
    );
  });

  test('ordinary calls on their usual paths, their bodies bent (colliding members above all), their headers mostly clean', () => {
    const usual = fc.constantFrom(
      '/a2a/jsonrpc',
      '/a2a/rest/message:send',
      '/a2a/rest/v1/message:send',
      '/a2a/rest/acme/message:send',
      '/a2a/rest/tasks/t-1',
      '/a2a/rest/tasks/t-1:cancel',
      '/a2a/jsonrpc?code=abc',
      '/a2a/rest/tasks?historyLength=2',
      '/rpc',
      '/a2a/jsonrpc/',
      '/A2A/JSONRPC',
      '/a2a/rest/tasks/t-1/pushNotificationConfigs',
    );
    const clean = fc.constantFrom<IncomingHttpHeaders>(
      { host: '127.0.0.1:4000', 'content-type': 'application/json', 'a2a-version': '1.0', 'content-length': '157' },
      { 'content-type': 'application/json' },
      { 'content-type': 'application/json', 'a2a-version': '0.3' },
      { 'content-type': 'application/a2a+json', 'a2a-version': '1.0' },
      { 'content-type': 'application/json; charset=utf-8', 'a2a-version': '1.0', connection: 'keep-alive' },
    );
    // Members that collide often: a message's own names, and their other spellings, anywhere in it.
    const near = (names: readonly string[]) => fc.array(fc.tuple(fc.constantFrom(...names).chain(spelling), leaf), { maxLength: 3 });
    const part = fc
      .tuple(near(['text', 'kind', 'metadata']), fc.boolean())
      .map(([more, first]): J => ({ t: 'o', m: first ? [...more, ['text', { t: 's', v: 'hi' }]] : [['text', { t: 's', v: 'hi' }], ...more] }));
    const richMessage = fc
      .tuple(near(['messageId', 'role', 'parts', 'content', 'taskId', 'contextId']), fc.array(part, { maxLength: 2 }), fc.nat({ max: 3 }))
      .map(([more, parts, at]): J => {
        const m: Array<readonly [string, J]> = [
          ['messageId', { t: 's', v: 'm-1' }],
          ['role', { t: 's', v: 'ROLE_USER' }],
          ['parts', { t: 'a', v: parts }],
        ];
        return { t: 'o', m: [...m.slice(0, at), ...more, ...m.slice(at)] };
      });
    const richParams = fc
      .tuple(richMessage, near(['message', 'configuration', 'metadata', 'tenant', 'id']), fc.boolean())
      .map(([m, more, first]): J => ({ t: 'o', m: first ? [...more, ['message', m]] : [['message', m], ...more] }));
    const call = fc
      .tuple(
        fc.constantFrom('SendMessage', 'message/send', 'SendStreamingMessage', 'GetTask', 'CancelTask', 'GetExtendedAgentCard'),
        fc.oneof({ weight: 3, arbitrary: richParams }, { weight: 1, arbitrary: params }),
        fc.constantFrom<J>({ t: 'n', raw: '1' }, { t: 's', v: 'r' }),
        style,
      )
      .map(([m, p, id, st]) =>
        Buffer.from(
          emitJ(
            {
              t: 'o',
              m: [
                ['jsonrpc', { t: 's', v: '2.0' }],
                ['id', id],
                ['method', { t: 's', v: m }],
                ['params', p],
              ],
            },
            st,
          ),
          'utf8',
        ),
      );
    const restBody = fc
      .tuple(fc.oneof({ weight: 3, arbitrary: richParams }, { weight: 1, arbitrary: params }), style)
      .map(([p, st]) => Buffer.from(emitJ(p, st), 'utf8'));
    const verbs = fc.oneof({ weight: 5, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constant('GET') });
    const bodies = fc.oneof({ weight: 3, arbitrary: call }, { weight: 3, arbitrary: restBody }, { weight: 1, arbitrary: body });
    fc.assert(
      fc.property(verbs, usual, fc.oneof({ weight: 4, arbitrary: clean }, { weight: 1, arbitrary: headers }), bodies, options, (v, p, h, b, opts) => {
        same({ verb: v, path: p, headers: h, body: b }, opts);
      }),
      { numRuns: 8_000 },
    );
  });

  test('paths classify remembers: the same answers whatever was classified before, under options old and new', () => {
    // Few paths, so they are remembered and met again; options alternate, and some are fresh copies of others.
    const p = fc.constantFrom(
      '/a2a/jsonrpc',
      '/a2a/rest/message:send',
      '/a2a/rest',
      '/rpc',
      '/x/tasks/t:cancel',
      '/a2a/rest/tasks/t-1',
      '/A2A/JsonRpc',
      '/a2a/jsonrpc?code=abc',
      '/%2e/a',
      '/a2a/rest/v1/card',
    );
    const opts = fc.oneof(
      options,
      options.map((o) => ({ ...o, endpoints: { ...o.endpoints } })),
    );
    const step = fc.tuple(fc.constantFrom('POST', 'GET'), p, opts, fc.boolean());
    const rpc = Buffer.from(
      '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}',
    );
    const rest = Buffer.from('{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}');
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), (steps) => {
        for (const [v, path, o, asRpc] of steps)
          same({ verb: v, path, headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: asRpc ? rpc : rest }, o);
      }),
      { numRuns: 300 },
    );
    // More distinct paths than are kept, then the first ones again, and paths too long to keep.
    const many = Array.from({ length: 200 }, (_, i) => `/a2a/rest/tasks/t-${i}`);
    for (const path of [...many, ...many.slice(0, 10), '/a2a/jsonrpc', `/${'a'.repeat(600)}`, `/${'a'.repeat(600)}`]) {
      same({ verb: 'GET', path, headers: { 'a2a-version': '1.0' }, body: null }, A2A_OPTIONS);
      same({ verb: 'POST', path, headers: { 'content-type': 'application/json' }, body: rpc }, A2A_OPTIONS);
    }
  });

  test('hand-picked bounds: depth 64 and 65, 100,000 values and one more, in and out of strings', () => {
    const bodies = [
      `${'['.repeat(64)}${']'.repeat(64)}`,
      `${'['.repeat(65)}${']'.repeat(65)}`,
      `{"a":"${'['.repeat(70)}"}`,
      `["\\"${'{'.repeat(70)}"]`,
      `["\\\\",${'['.repeat(64)}${']'.repeat(64)}]`,
      `["\\\\",${'['.repeat(63)}${']'.repeat(63)}]`,
      `[${'1,'.repeat(99_999)}1]`,
      `[${'1,'.repeat(100_000)}1]`,
      `[${'1,'.repeat(50_000)}"${'1,'.repeat(60_000)}"]`,
      `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${'['.repeat(64)}1${']'.repeat(64)}}}`,
      `{"x":"é${'['.repeat(80)}"}`,
    ];
    for (const text of bodies) {
      for (const opts of OPTION_SETS) {
        for (const p of ['/a2a/jsonrpc', '/a2a/rest/message:send', '/other'])
          same({ verb: 'POST', path: p, headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: Buffer.from(text, 'utf8') }, opts);
      }
    }
  });
});

// ---- the pieces that were rewritten, one by one ----

describe('rewritten pieces against their reference copies', () => {
  const keyPool = fc.oneof(
    fc.constantFrom(
      'taskId',
      'task_id',
      'TASKID',
      'task-id',
      'taſkId',
      'Task_Id',
      'id',
      'ID',
      'iD',
      'i_d',
      '',
      '_',
      '-',
      'a',
      'A',
      'ſ',
      's',
      'S',
      '\u212a',
      'k',
    ),
    fc.string({ maxLength: 3 }),
  );
  const nested = fc.letrec<{ v: unknown }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 1 }),
      fc
        .array(fc.tuple(keyPool, tie('v')), { maxLength: 12 })
        .map((m) => JSON.parse(`{${m.map(([k, x]) => `${JSON.stringify(k)}:${JSON.stringify(x) ?? 'null'}`).join(',')}}`) as unknown),
      fc.array(tie('v'), { maxLength: 4 }),
    ),
  })).v;

  test('ambiguousKey: the same first colliding name, objects small and large', () => {
    fc.assert(
      fc.property(nested, (v) => expect(ambiguousKey(v)).toBe(ref.ambiguousKey(v))),
      { numRuns: 20_000 },
    );
  });

  test('fieldKey: as the reference (an arrow over a regex then)', () => {
    fc.assert(
      fc.property(fc.oneof(keyPool, fc.string({ unit: 'binary', maxLength: 8 })), (k) => expect(fieldKey(k)).toBe(ref.fieldKey(k))),
      { numRuns: 20_000 },
    );
  });

  const seg = fc.oneof(
    fc.constantFrom(
      'v1',
      'V1',
      'tasks',
      'TASKS',
      'message:send',
      'Message:Stream',
      'card',
      'extendedAgentCard',
      't',
      't:cancel',
      'T:SUBSCRIBE',
      ':cancel',
      'pushNotificationConfigs',
      'a2a',
      'İ',
      'ſ',
      '',
      'taſks',
      'TAſKS',
      'meſſage:send',
      't:ſubscribe',
      'pushNotİficationConfigs',
      'pushNotificationConfigſ',
      'tas\u0307ks',
    ),
    fc.string({ maxLength: 4 }),
  );
  const segs = fc.array(seg, { maxLength: 7 });

  test('looksLikeRest: the same answer for any segments', () => {
    fc.assert(
      fc.property(segs, (s) => expect([s, looksLikeRest(s)]).toEqual([s, refRest.looksLikeRest(s)])),
      { numRuns: 20_000 },
    );
  });

  test('matchRest: the same match (parameters in the same order), ambiguity or none', () => {
    const version = fc.constantFrom(undefined, '1.0', '0.3', '', ' 1.0', '0.9', '1.1', 'x');
    fc.assert(
      fc.property(fc.constantFrom('GET', 'POST', 'DELETE', 'HEAD', 'get', 'PUT'), segs, version, (v, s, ver) => {
        const now = matchRest(v, s, ver);
        const was = refRest.matchRest(v, s, ver);
        expect([v, s, ver, now]).toStrictEqual([v, s, ver, was]);
        if (now !== undefined && 'pathParams' in now && was !== undefined && 'pathParams' in was)
          expect(Object.keys(now.pathParams)).toEqual(Object.keys(was.pathParams));
      }),
      { numRuns: 20_000 },
    );
  });

  test('isLegacyVersion: the same answer', () => {
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom(undefined, '1.0', '0.3', '1.0 ', ' 0.3', '1', '0', '0.3.1', '1.0.0'), fc.string({ maxLength: 5 })), (v) => {
        expect(isLegacyVersion(v)).toBe(refRest.isLegacyVersion(v));
      }),
      { numRuns: 5_000 },
    );
  });

  test('parseTarget and encodePath: the same as the reference', () => {
    const raw = fc.oneof(
      fc
        .tuple(
          fc.array(fc.oneof(seg, fc.constantFrom('%2F', '%2e', '.', '..', 'a b', 'é', '$&+,=', ';', '~', "!*'():@", '-_.', '?x=1', '?', '#')), {
            maxLength: 5,
          }),
          fc.boolean(),
        )
        .map(([s, slash]) => `/${s.join('/')}${slash ? '/' : ''}`),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(raw, fc.boolean(), (r, slash) => {
        const now = parseTarget(r);
        expect([r, now]).toStrictEqual([r, refTarget.parseTarget(r)]);
        if (now.ok) {
          expect(encodePath(now.target.segments, slash)).toBe(refTarget.encodePath(now.target.segments, slash));
          expect([r, encodeParsedPath(r, now.target)]).toEqual([r, refTarget.encodePath(now.target.segments, now.target.trailingSlash)]);
        }
      }),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 4 }), { maxLength: 4 }), fc.boolean(), (s, slash) => {
        expect(encodePath(s, slash)).toBe(refTarget.encodePath(s, slash));
      }),
      { numRuns: 10_000 },
    );
  });
});
