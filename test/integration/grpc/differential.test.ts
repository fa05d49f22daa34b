/**
 * The differential oracle of the HTTP bindings, for gRPC: generated SendMessage calls, mutated the
 * ways a gRPC parser can be led to read bytes differently (unknown fields of every wire type, a
 * repeated singular field, compression, path and content-type spellings, split frames), sent as raw
 * HTTP/2 through a proxy whose guardian denies everything and one whose guardian allows everything,
 * in front of a real SDK gRPC agent whose request handler records what it acts on.
 *   deny-all:  the handler acts on nothing, whatever the bytes.
 *   allow-all: every call the handler acts on equals a request the guardian approved (as the SDK's
 *              JSON mapping reads it), a call the proxy refused reached nothing, and a call with an
 *              unknown field was refused.
 * GRPC_DIFF_CASES (default 60) sets the cases per oracle; GRPC_DIFF_SEED replays a run.
 */
import zlib from 'node:zlib';
import fc from 'fast-check';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

const sdk: typeof A2A = require('@a2a-js/sdk');

jest.setTimeout(120_000);

const CASES = Number(process.env.GRPC_DIFF_CASES ?? 60);
const SEED = process.env.GRPC_DIFF_SEED === undefined ? undefined : Number(process.env.GRPC_DIFF_SEED);
const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const method = grpcMethodForPath(SEND);
if (method === undefined) throw new Error('SendMessage missing');
const codec = codecFor(method).request;

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap });

interface Case {
  readonly texts: readonly string[];
  /** Unknown fields appended at the top level: [field number, wire type]. */
  readonly unknown: ReadonlyArray<readonly [number, 0 | 1 | 2 | 5]>;
  /** A second `message` field (a repeated singular field: which one counts?). */
  readonly secondMessage: string | null;
  readonly encoding: 'none' | 'identity-header' | 'gzip' | 'deflate' | 'gzip-unflagged';
  readonly path: 'exact' | 'lower' | 'slash' | 'v03';
  readonly contentType: 'grpc' | 'grpc+proto' | 'grpc+json' | 'grpc;charset' | 'json';
  /** Split the frame into this many HTTP/2 DATA writes (1: one write). */
  readonly split: number;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  texts: fc.array(fc.string({ maxLength: 24 }), { minLength: 1, maxLength: 3 }),
  // Mostly none: a call with one is refused (field by number), and the oracle needs calls that pass.
  unknown: fc.oneof(
    { weight: 3, arbitrary: fc.constant([]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.tuple(fc.integer({ min: 16, max: 5000 }), fc.constantFrom(0 as const, 1 as const, 2 as const, 5 as const)), {
        minLength: 1,
        maxLength: 3,
      }),
    },
  ),
  secondMessage: fc.option(fc.string({ maxLength: 16 }), { nil: null }),
  encoding: fc.constantFrom('none' as const, 'identity-header' as const, 'gzip' as const, 'deflate' as const, 'gzip-unflagged' as const),
  path: fc.constantFrom('exact' as const, 'exact' as const, 'exact' as const, 'lower' as const, 'slash' as const, 'v03' as const),
  contentType: fc.constantFrom('grpc' as const, 'grpc' as const, 'grpc+proto' as const, 'grpc+json' as const, 'grpc;charset' as const, 'json' as const),
  split: fc.integer({ min: 1, max: 3 }),
});

/** Calls every proxy must pass under allow-all, run before the generated ones: the oracle is never vacuous. */
const VALID: readonly Case[] = (['none', 'identity-header', 'gzip', 'deflate'] as const).flatMap((encoding, i) =>
  (['grpc', 'grpc+proto'] as const).map((contentType) => ({
    texts: [`valid ${i}`],
    unknown: [],
    secondMessage: null,
    encoding,
    path: 'exact' as const,
    contentType,
    split: 1 + (i % 3),
  })),
);

function messageBytes(texts: readonly string[], id: string): Buffer {
  return codec.encode(codec.fromJson({ message: { messageId: id, role: 'ROLE_USER', parts: texts.map((text) => ({ text })) } }));
}

function unknownBytes(field: number, wire: 0 | 1 | 2 | 5): Uint8Array {
  const w = new BinaryWriter().uint32((field << 3) | wire);
  if (wire === 0) w.uint64(123456789n);
  else if (wire === 1) w.fixed64(42n);
  else if (wire === 2) w.string(`UNKNOWN-${field}`);
  else w.fixed32(7);
  return w.finish();
}

function wireOf(c: Case, n: number): { path: string; headers: Record<string, string>; body: Buffer } {
  let msg = Buffer.concat([messageBytes(c.texts, `m-${n}`), ...c.unknown.map(([f, w]) => unknownBytes(f, w))]);
  if (c.secondMessage !== null) msg = Buffer.concat([msg, messageBytes([c.secondMessage], `m2-${n}`)]);
  const headers: Record<string, string> = { 'a2a-version': '1.0' };
  let frame: Buffer;
  switch (c.encoding) {
    case 'none':
      frame = grpcFrame(msg);
      break;
    case 'identity-header':
      headers['grpc-encoding'] = 'identity';
      frame = grpcFrame(msg);
      break;
    case 'gzip':
      headers['grpc-encoding'] = 'gzip';
      frame = grpcFrame(zlib.gzipSync(msg), true);
      break;
    case 'deflate':
      headers['grpc-encoding'] = 'deflate';
      frame = grpcFrame(zlib.deflateSync(msg), true);
      break;
    case 'gzip-unflagged':
      frame = grpcFrame(zlib.gzipSync(msg), true);
      break;
  }
  const path = { exact: SEND, lower: SEND.toLowerCase(), slash: `${SEND}/`, v03: '/a2a.v1.A2AService/SendMessage' }[c.path];
  headers['content-type'] = {
    grpc: 'application/grpc',
    'grpc+proto': 'application/grpc+proto',
    'grpc+json': 'application/grpc+json',
    'grpc;charset': 'application/grpc; charset=utf-8',
    json: 'application/json',
  }[c.contentType];
  return { path, headers, body: frame };
}

/** What the handler acted on, in the guardian's terms (the SDK's JSON mapping). */
function actedJson(params: unknown): unknown {
  const revived = JSON.parse(JSON.stringify(params), (_k, v: unknown) => v);
  return JSON.parse(JSON.stringify(sdk.SendMessageRequest.toJSON(revived as A2A.SendMessageRequest)));
}

/** Runs the cases; returns how many the proxy let through (status OK). */
async function run(proxy: TestProxy, check: (c: Case, status: number | undefined, approved: unknown[]) => void): Promise<number> {
  let n = 0;
  let passed = 0;
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      rec.clear();
      s.guardian.clear();
      const w = wireOf(c, n++);
      const a = await rawGrpc(proxy.grpcAddress as string, w.path, w.body, w.headers, c.split);
      const approved = s.guardian
        .calls()
        .filter((e) => e.params?.payload?.method === 'SendMessage')
        .map((e) => e.params.payload.params);
      if (a.grpcStatus === 0) passed++;
      check(c, a.grpcStatus, approved);
    }),
    { numRuns: CASES, examples: VALID.map((c) => [c] as [Case]), ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  return passed;
}

describe('gRPC differential', () => {
  test('deny-all: the agent acts on nothing', async () => {
    const proxy = await s.proxy({ GRPC_PORT: '0' });
    s.guardian.script(() => ({ decision: 'deny', message: 'deny-all' }));
    await run(proxy, () => {
      expect(rec.calls).toEqual([]);
    });
  });

  test('allow-all: what the agent acts on is what the guardian approved; a refused call reaches nothing', async () => {
    const proxy = await s.proxy({ GRPC_PORT: '0' });
    s.guardian.script(() => ({ decision: 'allow' }));
    const passed = await run(proxy, (c, status, approved) => {
      // A field the agent's decoder would skip is refused, never dropped on the way.
      if (c.unknown.length > 0) expect(status).not.toBe(0);
      if (status !== 0) {
        expect(rec.calls).toEqual([]);
        return;
      }
      expect(rec.calls.map((x) => x.method)).toEqual(['sendMessage']);
      expect(approved).toHaveLength(1);
      expect(actedJson(rec.calls[0]?.params)).toEqual(approved[0]);
      expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('UNKNOWN-');
    });
    // The oracle is not vacuous: the known-valid calls went through (the generated ones add about 15 % more).
    expect(passed).toBeGreaterThanOrEqual(VALID.length);
  });
});
