/**
 * The response side as a differential. ROLE=client with INSPECT_RESPONSES: the remote agent
 * is the party the response hooks watch, and here it is hostile: a scripted HTTP server whose answers
 * are generated to read differently to different parsers. Two oracles read every case: the real SDK
 * client (v1.0 JSON-RPC, created from the proxy's card) that acts on the answers, and the bytes a raw
 * caller gets (what any other parser, however lax, could read):
 *   allow-all: every word the client acts on (a result, a stream event, an error message), and every
 *              word in the caller's bytes, is in an answer payload the guardian approved;
 *   deny-all:  the client acts on no word of the remote's, and the caller's bytes hold none.
 * Every text the remote writes is a marker word (W<case>x<k>), so "acts on" is "shows the marker".
 *
 * Unary dimensions: duplicate members (result, message, parts, text), \\u escapes, a BOM, trailing
 * bytes, error and result together, content types and charsets (text/event-stream on a unary answer,
 * or an SSE event as its body), content codings (one, stacked, unknown), statuses, framing (length,
 * chunked). Stream dimensions: line endings (LF, CRLF, CR, mixed), `data:` with and without the
 * space, data split over lines, comments, event/id/retry fields, an `event: error`, a BOM, a missing
 * last blank line, content types, and lines a lax parser reads apart from WHATWG: a `data:` line
 * after a comment or field joined by a character some split lines at (U+2028, NEL, VT, FF, FS...),
 * field names in other cases or spacing (`DATA:`, `data :`), markers in `event:`, `id:` and comments.
 * RESP_DIFF_CASES (default 150) sets the cases per oracle; RESP_DIFF_SEED replays a run;
 * RESP_DIFF_UNINSPECTED=1 runs the proxy without inspection, to see the oracle catch it.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { collect, makeClient, sendReq, type Client } from '../../helpers/agent';
import { startGuardian, isResponseEnvelope, type TestGuardian } from '../../helpers/guardian';
import { closeServer } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(240_000);

const CASES = Number(process.env.RESP_DIFF_CASES ?? 150);
const SEED = process.env.RESP_DIFF_SEED === undefined ? undefined : Number(process.env.RESP_DIFF_SEED);

type BodyTrick = 'plain' | 'dupResult' | 'dupMessage' | 'dupParts' | 'dupText' | 'escapes' | 'bom' | 'trailing' | 'errorAndResult' | 'secondDoc' | 'sseEvent';
type CType = 'json' | 'jsonUtf8' | 'jsonUtf16' | 'a2aJson' | 'textPlain' | 'none' | 'jsonLatin1' | 'sse' | 'sseCharset' | 'sseUpper';
type Coding = 'none' | 'gzip' | 'deflate' | 'br' | 'gzipTwice' | 'identity' | 'unknown';
type Framing = 'length' | 'chunked';

interface UnaryCase {
  readonly kind: 'unary';
  readonly trick: BodyTrick;
  readonly ctype: CType;
  readonly coding: Coding;
  readonly status: 200 | 201 | 400 | 500;
  readonly framing: Framing;
}

type LineEnd = 'lf' | 'crlf' | 'cr' | 'mixed';
type EventTrick =
  'plain' | 'noSpace' | 'splitData' | 'comment' | 'fields' | 'errorEvent' | 'dupInEvent' | 'dataNoColon' | 'crInData' | 'laxSplit' | 'laxField' | 'named';

/** Characters a lax line reader may split at (str.splitlines, Unicode line breaks); only CR and LF are SSE line ends. */
const LAX_BREAKS = ['\u2028', '\u2029', '\u0085', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\r', '\0'];
/** Lines a `data:` line is glued onto by one of LAX_BREAKS. */
const LAX_CARRIERS = [': c', 'event: message', 'id: 5', 'retry: 5', 'x-field: v', ':'];
/** Field names a lax parser may take for `data`. */
const LAX_FIELDS = ['DATA:', 'Data:', 'data :', ' data:', '\tdata:', 'data\t:', 'data\u00a0:', 'data\u200b:'];

interface StreamCase {
  readonly kind: 'stream';
  readonly lineEnd: LineEnd;
  readonly tricks: readonly EventTrick[];
  /** Picks the break, carrier or field name of the lax tricks. */
  readonly lax: number;
  readonly bom: boolean;
  readonly lastBlank: boolean;
  readonly ctype: 'sse' | 'sseCharset' | 'sseUpper' | 'json';
}

type Case = UnaryCase | StreamCase;

const unaryArb: fc.Arbitrary<UnaryCase> = fc.record({
  kind: fc.constant('unary' as const),
  trick: fc.constantFrom<BodyTrick>(
    'plain',
    'dupResult',
    'dupMessage',
    'dupParts',
    'dupText',
    'escapes',
    'bom',
    'trailing',
    'errorAndResult',
    'secondDoc',
    'sseEvent',
  ),
  ctype: fc.constantFrom<CType>('json', 'json', 'jsonUtf8', 'jsonUtf16', 'a2aJson', 'textPlain', 'none', 'jsonLatin1', 'sse', 'sseCharset', 'sseUpper'),
  coding: fc.constantFrom<Coding>('none', 'none', 'gzip', 'deflate', 'br', 'gzipTwice', 'identity', 'unknown'),
  status: fc.constantFrom<200 | 201 | 400 | 500>(200, 200, 201, 400, 500),
  framing: fc.constantFrom<Framing>('length', 'chunked'),
});

const streamArb: fc.Arbitrary<StreamCase> = fc.record({
  kind: fc.constant('stream' as const),
  lineEnd: fc.constantFrom<LineEnd>('lf', 'crlf', 'cr', 'mixed'),
  tricks: fc.array(
    fc.constantFrom<EventTrick>(
      'plain',
      'noSpace',
      'splitData',
      'comment',
      'fields',
      'errorEvent',
      'dupInEvent',
      'dataNoColon',
      'crInData',
      'laxSplit',
      'laxField',
      'named',
    ),
    { minLength: 1, maxLength: 4 },
  ),
  lax: fc.nat(1000),
  bom: fc.boolean(),
  lastBlank: fc.boolean(),
  ctype: fc.constantFrom<StreamCase['ctype']>('sse', 'sse', 'sseCharset', 'sseUpper', 'json'),
});

/** Answers every proxy must relay under allow-all, run before the generated ones: the oracle is never vacuous. */
const VALID: readonly Case[] = [
  { kind: 'unary', trick: 'plain', ctype: 'json', coding: 'none', status: 200, framing: 'length' },
  { kind: 'unary', trick: 'plain', ctype: 'json', coding: 'gzip', status: 200, framing: 'chunked' },
  { kind: 'stream', lineEnd: 'lf', tricks: ['plain'], lax: 0, bom: false, lastBlank: true, ctype: 'sse' },
  { kind: 'stream', lineEnd: 'crlf', tricks: ['plain', 'comment'], lax: 0, bom: false, lastBlank: true, ctype: 'sse' },
];

const MARK = /W\d+x\d+/g;
const markers = (text: string): string[] => [...new Set(text.match(MARK) ?? [])];

const message = (text: string) => ({ messageId: 'm', role: 'ROLE_AGENT', parts: [{ text }] });

/** The unary answer body for a case (ids as the client sent them). */
function unaryBody(c: UnaryCase, n: number, id: unknown): string {
  const w = (k: number) => `W${n}x${k}`;
  const idJ = JSON.stringify(id);
  const msg = (text: string) => JSON.stringify({ message: message(text) });
  switch (c.trick) {
    case 'plain':
      return `{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))}}`;
    case 'dupResult':
      return `{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))},"result":${msg(w(2))}}`;
    case 'dupMessage':
      return `{"jsonrpc":"2.0","id":${idJ},"result":{"message":${JSON.stringify(message(w(1)))},"message":${JSON.stringify(message(w(2)))}}}`;
    case 'dupParts':
      return `{"jsonrpc":"2.0","id":${idJ},"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"${w(1)}"}],"parts":[{"text":"${w(2)}"}]}}}`;
    case 'dupText':
      return `{"jsonrpc":"2.0","id":${idJ},"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"${w(1)}","text":"${w(2)}"}]}}}`;
    case 'escapes':
      return `{"jsonrpc":"2.0","id":${idJ},"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"\\u0074ext":"${w(1).replace(/./g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}"}]}}}`;
    case 'bom':
      return `\uFEFF{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))}}`;
    case 'trailing':
      return `{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))}} {"x":"${w(2)}"}`;
    case 'errorAndResult':
      return `{"jsonrpc":"2.0","id":${idJ},"error":{"code":-32001,"message":"${w(1)}"},"result":${msg(w(2))}}`;
    case 'secondDoc':
      return `{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))}}\n{"jsonrpc":"2.0","id":${idJ},"result":${msg(w(2))}}`;
    case 'sseEvent':
      return `data: {"jsonrpc":"2.0","id":${idJ},"result":${msg(w(1))}}\n\n`;
  }
}

function encodeBody(text: string, c: UnaryCase): { bytes: Buffer; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  let bytes = c.ctype === 'jsonUtf16' ? Buffer.from(text, 'utf16le') : c.ctype === 'jsonLatin1' ? Buffer.from(text, 'latin1') : Buffer.from(text, 'utf8');
  const ct: Record<CType, string | undefined> = {
    json: 'application/json',
    jsonUtf8: 'application/json; charset=utf-8',
    jsonUtf16: 'application/json; charset=utf-16le',
    a2aJson: 'application/a2a+json',
    textPlain: 'text/plain',
    none: undefined,
    jsonLatin1: 'application/json; charset=iso-8859-1',
    sse: 'text/event-stream',
    sseCharset: 'text/event-stream; charset=utf-8',
    sseUpper: 'Text/Event-Stream',
  };
  if (ct[c.ctype] !== undefined) headers['content-type'] = ct[c.ctype] as string;
  switch (c.coding) {
    case 'gzip':
      bytes = zlib.gzipSync(bytes);
      headers['content-encoding'] = 'gzip';
      break;
    case 'deflate':
      bytes = zlib.deflateSync(bytes);
      headers['content-encoding'] = 'deflate';
      break;
    case 'br':
      bytes = zlib.brotliCompressSync(bytes);
      headers['content-encoding'] = 'br';
      break;
    case 'gzipTwice':
      bytes = zlib.gzipSync(zlib.gzipSync(bytes));
      headers['content-encoding'] = 'gzip, gzip';
      break;
    case 'identity':
      headers['content-encoding'] = 'identity';
      break;
    case 'unknown':
      headers['content-encoding'] = 'x-snappy';
      break;
    default:
      break;
  }
  return { bytes, headers };
}

/** The SSE body for a case: one event per trick, each naming a marker, in the chosen line endings. */
function streamBody(c: StreamCase, n: number, id: unknown): string {
  let k = 0;
  const nl = (i: number) => ({ lf: '\n', crlf: '\r\n', cr: '\r', mixed: ['\n', '\r\n', '\r'][i % 3] as string })[c.lineEnd];
  let line = 0;
  const L = (s: string) => `${s}${nl(line++)}`;
  const data = (text: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { message: message(text) } });
  let out = c.bom ? '\uFEFF' : '';
  c.tricks.forEach((t, i) => {
    const w = `W${n}x${++k}`;
    const last = i === c.tricks.length - 1 && !c.lastBlank;
    const end = last ? '' : L('');
    switch (t) {
      case 'plain':
        out += L(`data: ${data(w)}`) + end;
        break;
      case 'noSpace':
        out += L(`data:${data(w)}`) + end;
        break;
      case 'splitData': {
        const d = data(w);
        out += L(`data: ${d.slice(0, 20)}`) + L(`data: ${d.slice(20)}`) + end;
        break;
      }
      case 'comment':
        out += L(`: ${w} comment`) + L(`data: ${data(`W${n}x${++k}`)}`) + end;
        break;
      case 'fields':
        out += L('id: 7') + L('retry: 10') + L('event: message') + L(`data: ${data(w)}`) + end;
        break;
      case 'errorEvent':
        out += L('event: error') + L(`data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: w } })}`) + end;
        break;
      case 'dupInEvent':
        out +=
          L(
            `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"message":${JSON.stringify(message(w))}},"result":{"message":${JSON.stringify(message(`W${n}x${++k}`))}}}`,
          ) + end;
        break;
      case 'dataNoColon':
        out += L('data') + L(`data: ${data(w)}`) + end;
        break;
      // A bare CR inside the data line: a line end to WHATWG parsers, not to readers that split on LF only.
      case 'crInData':
        out += L(`data: {"jsonrpc":"2.0",\r"id":${JSON.stringify(id)},"result":{"message":${JSON.stringify(message(w))}}}`) + end;
        break;
      case 'laxSplit': {
        const brk = LAX_BREAKS[(c.lax + i) % LAX_BREAKS.length] as string;
        const carrier = LAX_CARRIERS[Math.floor((c.lax + i) / LAX_BREAKS.length) % LAX_CARRIERS.length] as string;
        out += L(`${carrier}${brk}data: ${data(w)}`) + end;
        break;
      }
      case 'laxField':
        out += L(`${LAX_FIELDS[(c.lax + i) % LAX_FIELDS.length] as string} ${data(w)}`) + end;
        break;
      // Markers in the fields around an event's data, which the guardian does not judge.
      case 'named':
        out += L(`event: ${w}`) + L(`id: W${n}x${++k}`) + L(`: W${n}x${++k}`) + L(`retry: 1`) + L(`data: ${data(`W${n}x${++k}`)}`) + end;
        break;
    }
  });
  return out;
}

let current: { c: Case; n: number } | undefined;
let remote: http.Server;
let origin: string;

function card(o: string) {
  return {
    name: 'hostile remote',
    description: 'scripted',
    version: '1.0.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    supportedInterfaces: [{ url: `${o}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  };
}

beforeAll(async () => {
  remote = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const body = JSON.stringify(card(origin));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString('utf8')));
    req.on('end', () => {
      const id = (JSON.parse(text) as { id: unknown }).id;
      const cur = current;
      if (cur === undefined) return void res.writeHead(500).end();
      if (cur.c.kind === 'unary') {
        const { bytes, headers } = encodeBody(unaryBody(cur.c, cur.n, id), cur.c);
        if (cur.c.framing === 'length') headers['content-length'] = String(bytes.length);
        res.writeHead(cur.c.status, headers);
        return void res.end(bytes);
      }
      const ct = { sse: 'text/event-stream', sseCharset: 'text/event-stream; charset=utf-8', sseUpper: 'Text/Event-Stream', json: 'application/json' }[
        cur.c.ctype
      ];
      res.writeHead(200, { 'content-type': ct });
      res.end(streamBody(cur.c, cur.n, id));
    });
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeServer(remote);
});

/** What the client acted on, as text: its result or events, or its error's message. */
async function clientSees(client: Client, c: Case): Promise<string> {
  try {
    if (c.kind === 'unary') return JSON.stringify(await client.sendMessage(sendReq('hi')));
    return JSON.stringify(await collect(client.sendMessageStream(sendReq('hi'))));
  } catch (err) {
    const e = err as Error & { cause?: unknown };
    return `ERROR ${e.message} ${JSON.stringify(e.cause ?? null)}`;
  }
}

/**
 * What any parser could read of the answer: the body bytes a raw caller gets, decoded every way a
 * lax client might (UTF-8, UTF-16LE, Latin-1), for the same call the SDK client makes.
 */
function rawSees(proxyUrl: string, c: Case): Promise<string> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 'raw-1',
    method: c.kind === 'unary' ? 'SendMessage' : 'SendStreamingMessage',
    params: { message: { messageId: 'r', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
  });
  const accept = c.kind === 'unary' ? 'application/json' : 'text/event-stream';
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${proxyUrl}/a2a/jsonrpc`,
      { method: 'POST', headers: { 'content-type': 'application/json', accept, 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('error', () => undefined);
        res.on('close', () => {
          const bytes = Buffer.concat(parts);
          resolve(`${bytes.toString('utf8')} ${bytes.toString('utf16le')} ${bytes.toString('latin1')}`);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function run(mode: 'allow' | 'deny'): Promise<{ acted: number }> {
  const guardian: TestGuardian = await startGuardian();
  const proxy: TestProxy = await startTestProxy({
    ROLE: 'client',
    UPSTREAM_URL: origin,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: process.env.RESP_DIFF_UNINSPECTED === '1' ? 'false' : 'true',
    INSPECT_CARDS: 'false',
  });
  let acted = 0;
  try {
    guardian.script((e) => (mode === 'deny' && isResponseEnvelope(e) ? { decision: 'deny' } : { decision: 'allow' }));
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(unaryArb, streamArb), async (c) => {
        current = { c, n: ++n };
        guardian.clear();
        const seen = markers(await clientSees(client, c));
        const inBytes = markers(await rawSees(proxy.url, c));
        const approved = new Set(markers(guardian.approved().join(' ')));
        const unjudged = (words: string[]) => (mode === 'deny' ? words : words.filter((m) => !approved.has(m)));
        if (seen.length > 0 && n <= VALID.length) acted++;
        expect({ case: c, unseen: unjudged(seen), inBytes: unjudged(inBytes) }).toEqual({ case: c, unseen: [], inBytes: [] });
      }),
      { numRuns: CASES, examples: VALID.map((c) => [c] as [Case]), ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  } finally {
    await proxy.close();
    await guardian.close();
  }
  return { acted };
}

test('allow-all: every word the client acts on is in an answer the guardian approved', async () => {
  const { acted } = await run('allow');
  // Not vacuous: the client acted on each known-valid answer.
  expect(acted).toBe(VALID.length);
});

test('deny-all: the client acts on no word of the remote', async () => {
  await run('deny');
});

test('FAIL_MODE=open: a unary answer labelled text/event-stream passes as it is, unjudged and counted; closed refuses it before reading it', async () => {
  const guardian: TestGuardian = await startGuardian();
  const open = await startTestProxy({
    ROLE: 'client',
    UPSTREAM_URL: origin,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
    FAIL_MODE: 'open',
  });
  const closed = await startTestProxy({
    ROLE: 'client',
    UPSTREAM_URL: origin,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
    FAIL_MODE: 'closed',
  });
  const c: UnaryCase = { kind: 'unary', trick: 'plain', ctype: 'sse', coding: 'none', status: 200, framing: 'length' };
  const counted = async (p: TestProxy): Promise<string> =>
    (await p.metrics.registry.metrics())
      .split('\n')
      .filter((l) => l.startsWith('a2a_guard_fail_open_passes_total'))
      .join();
  try {
    current = { c, n: 9001 };
    guardian.clear();
    expect(await rawSees(open.url, c)).toContain('W9001x1');
    expect(guardian.envelopes.filter((e) => isResponseEnvelope(e))).toHaveLength(0);
    expect(await counted(open)).toBe('a2a_guard_fail_open_passes_total 1');
    const refused = await rawSees(closed.url, c);
    expect(refused).not.toContain('W9001x1');
    expect(refused).toContain('-31502');
    expect(await counted(closed)).toBe('a2a_guard_fail_open_passes_total 0');
  } finally {
    await open.close();
    await closed.close();
    await guardian.close();
  }
});
