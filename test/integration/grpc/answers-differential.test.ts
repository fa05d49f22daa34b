/**
 * The gRPC response side as a differential. ROLE=client with INSPECT_RESPONSES and a hostile
 * remote agent serving gRPC (a raw HTTP/2 server) whose answers are generated to read differently to
 * different readers: unknown fields, a repeated singular field, enum numbers the SDK does not define,
 * compressed messages (declared or not), a second message for a unary call, a status with words in
 * grpc-message and grpc-status-details-bin after or instead of the messages, trailers-only answers.
 * The oracle is the real SDK gRPC client created from the proxy's card:
 *   allow-all: every word the client acts on (its result, or its error's message and details) is in
 *              an answer payload the guardian approved;
 *   deny-all:  the client acts on no word of the remote.
 * GRPC_RESP_CASES (default 120) sets the cases per oracle; GRPC_RESP_SEED replays a run.
 */
import http from 'node:http';
import http2 from 'node:http2';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { sendReq } from '../../helpers/agent';
import { startGuardian, isResponseEnvelope } from '../../helpers/guardian';
import { closeServer } from '../../helpers/net';
import { grpcFrame, makeGrpcClient } from '../../helpers/grpc';
import { startTestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';
import { encodeGrpcMessage, statusDetailsBin } from '../../../src/a2a/bindings/grpc/status';

jest.setTimeout(240_000);

const CASES = Number(process.env.GRPC_RESP_CASES ?? 120);
const SEED = process.env.GRPC_RESP_SEED === undefined ? undefined : Number(process.env.GRPC_RESP_SEED);
const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const method = grpcMethodForPath(SEND);
if (method === undefined) throw new Error('SendMessage');
const response = codecFor(method).response;

type MessageTrick = 'plain' | 'unknownField' | 'secondMessageField' | 'badRole' | 'compressed' | 'compressedUndeclared';
type Ending = 'ok' | 'errorAfter' | 'trailersOnlyError' | 'twoMessages' | 'noStatus' | 'okWithMessage';

interface Case {
  readonly trick: MessageTrick;
  readonly ending: Ending;
  readonly code: number;
  readonly details: boolean;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  trick: fc.constantFrom<MessageTrick>('plain', 'plain', 'unknownField', 'secondMessageField', 'badRole', 'compressed', 'compressedUndeclared'),
  ending: fc.constantFrom<Ending>('ok', 'ok', 'errorAfter', 'trailersOnlyError', 'twoMessages', 'noStatus', 'okWithMessage'),
  code: fc.integer({ min: 1, max: 16 }),
  details: fc.boolean(),
});

/** Answers every proxy must relay under allow-all, run before the generated ones: the oracle is never vacuous. */
const VALID: readonly Case[] = (['plain', 'compressed', 'unknownField'] as const).map((trick, i) => ({
  trick,
  ending: 'ok' as const,
  code: 1 + i,
  details: false,
}));

const MARK = /W\d+x\d+/g;
const markers = (text: string): string[] => [...new Set(text.match(MARK) ?? [])];

function answerBytes(text: string, role = 'ROLE_AGENT'): Buffer {
  return response.encode(response.fromJson({ message: { messageId: 'm', role, parts: [{ text }] } }));
}

function messageOf(c: Case, n: number): { data: Buffer; compressed: boolean; encoding?: string } {
  const w = (k: number) => `W${n}x${k}`;
  switch (c.trick) {
    case 'plain':
      return { data: answerBytes(w(1)), compressed: false };
    case 'unknownField':
      return {
        data: Buffer.concat([
          answerBytes(w(1)),
          Buffer.from(
            new BinaryWriter()
              .uint32((77 << 3) | 2)
              .string(w(2))
              .finish(),
          ),
        ]),
        compressed: false,
      };
    case 'secondMessageField':
      return { data: Buffer.concat([answerBytes(w(1)), answerBytes(w(2))]), compressed: false };
    case 'badRole': {
      const m = response.fromJson({ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: w(1) }] } }) as { payload?: { value?: { role?: number } } };
      if (m.payload?.value !== undefined) m.payload.value.role = 42;
      return { data: response.encode(m), compressed: false };
    }
    case 'compressed':
      return { data: zlib.gzipSync(answerBytes(w(1))), compressed: true, encoding: 'gzip' };
    case 'compressedUndeclared':
      return { data: zlib.gzipSync(answerBytes(w(1))), compressed: true };
  }
}

let current: { c: Case; n: number } | undefined;
let remote: http2.Http2Server;
let cardServer: http.Server;
let grpcAddress: string;
let cardOrigin: string;

beforeAll(async () => {
  remote = http2.createServer();
  remote.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.resume();
    stream.on('end', () => {
      const cur = current;
      if (cur === undefined) return stream.respond({ ':status': 500 }, { endStream: true });
      const { c, n } = cur;
      const w = (k: number) => `W${n}x${k}`;
      const status = {
        'grpc-status': String(c.code),
        'grpc-message': encodeGrpcMessage(`failed ${w(5)}`),
        ...(c.details
          ? {
              'grpc-status-details-bin': statusDetailsBin(c.code, `detail ${w(6)}`, [
                { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: `R${w(7)}`, domain: 'remote', metadata: { k: w(8) } },
              ]).toString('base64'),
            }
          : {}),
      };
      if (c.ending === 'trailersOnlyError') return stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...status }, { endStream: true });
      const m = messageOf(c, n);
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', ...(m.encoding === undefined ? {} : { 'grpc-encoding': m.encoding }) },
        { waitForTrailers: true },
      );
      stream.on('wantTrailers', () => {
        if (c.ending === 'noStatus') return stream.sendTrailers({ 'x-nothing': '1' });
        if (c.ending === 'errorAfter') return stream.sendTrailers(status);
        if (c.ending === 'okWithMessage') return stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': encodeGrpcMessage(`ok ${w(9)}`) });
        stream.sendTrailers({ 'grpc-status': '0' });
      });
      stream.write(grpcFrame(m.data, m.compressed));
      if (c.ending === 'twoMessages') stream.write(grpcFrame(answerBytes(w(3))));
      stream.end();
    });
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  grpcAddress = `127.0.0.1:${(remote.address() as AddressInfo).port}`;
  cardServer = http.createServer((_req, res) => {
    const body = JSON.stringify({
      name: 'hostile gRPC remote',
      description: 'scripted',
      version: '1.0.0',
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
      supportedInterfaces: [{ url: grpcAddress, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }],
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((r) => cardServer.listen(0, '127.0.0.1', r));
  cardOrigin = `http://127.0.0.1:${(cardServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeServer(cardServer);
  await new Promise<void>((r) => remote.close(() => r()));
});

async function run(mode: 'allow' | 'deny'): Promise<number> {
  const guardian = await startGuardian();
  const proxy = await startTestProxy({
    ROLE: 'client',
    UPSTREAM_URL: cardOrigin,
    GRPC_PORT: '0',
    GRPC_UPSTREAM_URL: `http://${grpcAddress}`,
    GUARDIAN_URL: guardian.url,
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
  });
  let acted = 0;
  try {
    guardian.script((e) => (mode === 'deny' && isResponseEnvelope(e) ? { decision: 'deny' } : { decision: 'allow' }));
    // GRPC_RESP_DIRECT=1: the client talks to the remote itself (to tell the client's own behaviour from the proxy's).
    const { client } = await makeGrpcClient(process.env.GRPC_RESP_DIRECT === '1' ? cardOrigin : proxy.url);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        current = { c, n: ++n };
        guardian.clear();
        let seenText: string;
        try {
          // Every call ends: a hang is a failure of its own.
          const answer = await Promise.race([
            client.sendMessage(sendReq('hi')),
            new Promise((_r, reject) => setTimeout(() => reject(new Error('HANG: no answer in 5 s')), 5000)),
          ]);
          seenText = JSON.stringify(answer);
        } catch (err) {
          const e = err as Error & { cause?: { details?: string; metadata?: unknown }; statusDetailsBin?: Buffer; metadata?: unknown };
          // What the SDK gives the application of a failed call: its message, its ErrorInfo metadata, the raw status details.
          seenText = `${e.message} ${JSON.stringify(e.metadata ?? null)} ${e.statusDetailsBin?.toString('latin1') ?? ''} ${e.cause?.details ?? ''}`;
        }
        expect({ case: c, hang: seenText.includes('HANG') }).toEqual({ case: c, hang: false });
        // Direct to the remote nothing is judged: only hangs are compared.
        if (process.env.GRPC_RESP_DIRECT === '1') return;
        const seen = markers(seenText);
        if (seen.length > 0 && n <= VALID.length) acted++;
        const approved = new Set(markers(guardian.approved().join(' ')));
        const unseen = mode === 'deny' ? seen : seen.filter((m) => !approved.has(m));
        expect({ case: c, unseen }).toEqual({ case: c, unseen: [] });
      }),
      { numRuns: CASES, examples: VALID.map((c) => [c] as [Case]), ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  } finally {
    await proxy.close();
    await guardian.close();
  }
  return acted;
}

test('allow-all: every word the SDK gRPC client acts on is in an answer the guardian approved', async () => {
  // The oracle is not vacuous: the client acted on each known-valid answer.
  expect(await run('allow')).toBe(VALID.length);
});

test('deny-all: the SDK gRPC client acts on no word of the remote', async () => {
  await run('deny');
});
