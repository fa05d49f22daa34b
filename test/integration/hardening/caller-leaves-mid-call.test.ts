/**
 * The caller going away at each stage of a call, over
 * JSON-RPC and gRPC, with task ownership on. Whatever stage it leaves in, nothing reaches the agent
 * after it left (or the agent's call is cancelled), and the call is one audit line: cancelled, with
 * upstreamMs only when the request had left for the agent. Real SDK agent (HTTP and gRPC, handler
 * recorded), real HTTP guardian, OIDC callers.
 */
import http2 from 'node:http2';
import { Writable } from 'node:stream';
import pino from 'pino';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame } from '../../helpers/grpc';
import { waitFor } from '../../helpers/net';
import { startIdentities, type TestIdentities } from '../../helpers/identities';
import { useStack } from '../../helpers/proxy-harness';
import { configFrom } from '../../../src/config/config';
import { startProxy, type ProxyInstance } from '../../../src/server';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, slowMs: 5000, stepMs: 20 });
let ids: TestIdentities;
let proxy: ProxyInstance;
const lines: Array<Record<string, any>> = [];
const calls = () => lines.filter((l) => l.msg === 'a2a call');

beforeAll(async () => {
  ids = await startIdentities();
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, any>);
      done();
    },
  });
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URL: s.agent.origin, GUARDIAN_URL: s.guardian.url, GRPC_PORT: '0', ...ids.env });
  proxy = await startProxy({ config, logger: pino({ level: 'info' }, sink) });
});
afterAll(async () => {
  await proxy?.close();
  await ids?.close();
});
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };
const message = (text: string) => ({ messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] });

/** Resolves once `stage` holds (the call reached the stage the caller leaves in), however slow the machine. */
const reached = (stage: () => boolean): Promise<void> => waitFor(stage, 25_000, 'the stage the caller leaves in');

/** A JSON-RPC call the caller abandons once `stage` holds. */
async function abandonHttp(body: unknown, stage: () => boolean): Promise<void> {
  const ac = new AbortController();
  void reached(stage).then(() => ac.abort());
  await fetch(`${proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...V1, ...ids.headersAs('A') },
    body: JSON.stringify(body),
    signal: ac.signal,
  })
    .then((r) => r.text())
    .catch(() => undefined);
}

/** A gRPC call the caller resets (RST_STREAM CANCEL) once `stage` holds. */
function abandonGrpc(rpc: string, params: Record<string, unknown>, stage: () => boolean): Promise<void> {
  const m = grpcMethodForPath(`/lf.a2a.v1.A2AService/${rpc}`);
  if (m === undefined) throw new Error(rpc);
  const c = codecFor(m).request;
  return new Promise((resolve) => {
    const session = http2.connect(`http://${proxy.grpcAddress as string}`);
    session.on('error', () => undefined);
    const req = session.request({ ':method': 'POST', ':path': m.path, 'content-type': 'application/grpc', te: 'trailers', ...V1, ...ids.headersAs('A') });
    req.on('error', () => undefined);
    req.on('data', () => undefined);
    req.end(grpcFrame(c.encode(c.fromJson(params))));
    void reached(stage).then(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
      resolve();
    });
  });
}

async function lastLine(before: number): Promise<Record<string, any>> {
  await waitFor(() => calls().length > before, 20_000, 'the audit line');
  return calls()[calls().length - 1] as Record<string, any>;
}

describe.each(['jsonrpc', 'grpc'] as const)('%s', (binding) => {
  const abandon = (rpc: string, params: Record<string, unknown>, stage: () => boolean) =>
    binding === 'grpc' ? abandonGrpc(rpc, params, stage) : abandonHttp({ jsonrpc: '2.0', id: 1, method: rpc, params }, stage);

  test('left while the guardian decides: the agent never acts; the audit line says cancelled, not forwarded', async () => {
    s.guardian.script(() => ({ decision: 'allow', delayMs: 1500 }));
    const before = calls().length;
    const judged = s.guardian.calls().length;
    await abandon('SendMessage', { message: message('never') }, () => s.guardian.calls().length > judged);
    const line = await lastLine(before);
    await new Promise((r) => setTimeout(r, 2000));
    expect(rec.calls).toEqual([]);
    expect(line).toMatchObject({ binding, outcome: 'cancelled' });
    expect(line.upstreamMs).toBeUndefined();
  });

  test("left while the agent works: the agent's call is cancelled; the audit line says cancelled, with upstreamMs", async () => {
    s.guardian.script(() => ({ decision: 'allow' }));
    s.agent.clear();
    const before = calls().length;
    await abandon('SendStreamingMessage', { message: message('slow') }, () => rec.calls.length > 0);
    const line = await lastLine(before);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream']);
    expect(line).toMatchObject({ binding, outcome: 'cancelled' });
    expect(line.upstreamMs).toBeGreaterThan(0);
    expect(line.upstreamMs).toBeLessThanOrEqual(line.totalMs);
    if (binding === 'grpc') {
      await waitFor(() => s.agent.grpcCancelled.length > 0, 5000, 'the agent call cancelled');
      expect(s.agent.grpcCancelled).toEqual(['sendStreamingMessage']);
    }
  });
});
