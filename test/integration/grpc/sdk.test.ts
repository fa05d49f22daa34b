/**
 * The gRPC binding with real parts: an @a2a-js/sdk gRPC agent (the same request handler as its HTTP
 * bindings, recorded below the transport), the SDK's gRPC client created from the proxy's card, a
 * scriptable HTTP guardian. What the agent's handler acted on and what the caller saw are asserted.
 */
import { collect, sendReq, startAgent, TaskState, textOf, type Client } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, grpcFrame, makeGrpcClient, rawGrpc } from '../../helpers/grpc';
import { createPki } from '../../helpers/pki';
import { startIdentities } from '../../helpers/identities';
import { configFrom } from '../../../src/config/config';
import { createLogger } from '../../../src/runtime/log';
import { startProxy } from '../../../src/server';
import type { AuditRecord } from '../../../src/observe/audit';
import * as grpcJs from '@grpc/grpc-js';
import { Agent, fetch as undiciFetch } from 'undici';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';
import { textIn } from '../../helpers/guardian';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, slowMs: 3000, stepMs: 20 });

let proxy: TestProxy;
let client: Client;
let grpcUrl: string | undefined;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
  ({ client, grpcUrl } = await makeGrpcClient(proxy.url));
});
beforeEach(() => rec.clear());

/** Calls the guardian judged, by A2A method of the payload (request hooks only). */
const requestEnvelopes = () => s.guardian.calls().filter((e) => e.params?.payload?.method !== undefined);

describe('card', () => {
  test("the proxy's card names its own gRPC listener, and the SDK client created from it calls there", async () => {
    expect(proxy.grpcAddress).toBeDefined();
    expect(grpcUrl).toBe(proxy.grpcAddress);
    expect(grpcUrl).not.toBe(s.agent.grpcAddress);
    const res = (await client.sendMessage(sendReq('through the proxy'))) as { id: string };
    expect(res.id).toBeTruthy();
    expect(requestEnvelopes().map((e) => e.params.payload.method)).toEqual(['SendMessage']);
  });

  test('without GRPC_PORT the served card carries no gRPC interface', async () => {
    const plain = await s.proxy({});
    const card = (await (await fetch(`${plain.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: Array<{ protocolBinding: string }> };
    expect(card.supportedInterfaces.some((i) => i.protocolBinding === 'GRPC')).toBe(false);
  });
});

describe('unary calls', () => {
  test('allow: the guardian sees the canonical JSON-RPC request; the agent acts on it; the caller gets the answer', async () => {
    const task = (await client.sendMessage(sendReq('hello grpc'))) as { id: string; status?: { state: number } };
    const env = requestEnvelopes()[0];
    expect(env.method).toBe('message/send');
    expect(env.params.payload).toMatchObject({
      jsonrpc: '2.0',
      method: 'SendMessage',
      params: { message: { role: 'ROLE_USER', parts: [{ text: 'hello grpc' }] } },
    });
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
    expect(textOf(rec.calls[0]?.params)).toContain('hello grpc');
    expect(task.id).toBeTruthy();
    // INSPECT_RESPONSES: the answer was judged too, as a JSON-RPC response with the request's id.
    const resp = s.guardian.calls().find((e) => e.params?.payload?.result !== undefined);
    expect(resp?.params.payload.id).toBe(env.params.payload.id);
    expect(resp?.params.payload.result.task.id).toBe(task.id);

    rec.clear();
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got.id).toBe(task.id);
    expect(rec.calls.map((c) => c.method)).toEqual(['getTask']);
    expect(requestEnvelopes().at(-1)?.params.payload).toMatchObject({ method: 'GetTask', params: { id: task.id } });
  });

  test('deny: PERMISSION_DENIED with the guardian reason; the agent never acts', async () => {
    s.guardian.script((env) =>
      textIn(env).includes('forbidden') ? { decision: 'deny', message: 'no forbidden things', reasonCode: ['POLICY'] } : { decision: 'allow' },
    );
    const err = await grpcFailure(client.sendMessage(sendReq('forbidden words')));
    expect(err.code).toBe(7);
    expect(err.message).toContain('no forbidden things');
    expect(rec.calls).toHaveLength(0);
  });

  test('modify: the agent acts on the replacement, re-encoded', async () => {
    s.guardian.script((env) => {
      const p = env.params.payload;
      if (p.method !== 'SendMessage') return { decision: 'allow' };
      const modified = structuredClone(p);
      modified.params.message.parts = [{ text: 'masked by guardian' }];
      return { decision: 'modify', modifiedPayload: modified };
    });
    await client.sendMessage(sendReq('my secret number 4111'));
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
    expect(textOf(rec.calls[0]?.params)).toContain('masked by guardian');
    expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('4111');
  });

  test('guardian failure: UNAVAILABLE (FAIL_MODE=closed); the agent never acts', async () => {
    s.guardian.script(() => ({ fault: 'http500' }));
    const err = await grpcFailure(client.getTask({ tenant: '', id: 'whatever', historyLength: undefined }));
    expect(err.code).toBe(14);
    expect(rec.calls).toHaveLength(0);
  });
});

describe('streams', () => {
  test('SendStreamingMessage relays every event, each judged in order', async () => {
    const events = await collect(client.sendMessageStream(sendReq('stream 3')));
    expect(events.length).toBeGreaterThanOrEqual(4);
    const judged = s.guardian.calls().filter((e) => e.params?.payload?.result !== undefined);
    expect(judged).toHaveLength(events.length);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream']);
    const last = events.at(-1) as { payload?: { $case: string; value: { status?: { state: number } } } };
    expect(last.payload?.$case).toBe('statusUpdate');
    expect(last.payload?.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  test('a deny at event k ends the stream with PERMISSION_DENIED after k-1 events', async () => {
    // By content, not arrival order: the events of a stream are judged several at once.
    s.guardian.script((env) => (textOf(env.params.payload.result) === 'chunk 1' ? { decision: 'deny', message: 'third event' } : { decision: 'allow' }));
    const seen: unknown[] = [];
    const err = await grpcFailure(
      (async () => {
        for await (const ev of client.sendMessageStream(sendReq('stream 5'))) seen.push(ev);
      })(),
    );
    expect(err.code).toBe(7);
    expect(seen).toHaveLength(2);
  });
});

test("a deny inside a running stream cancels the agent's call", async () => {
  s.agent.clear();
  let n = 0;
  s.guardian.script((env) => (env.params.payload.result !== undefined && ++n === 2 ? { decision: 'deny', message: 'second event' } : { decision: 'allow' }));
  const err = await grpcFailure(
    (async () => {
      for await (const _ev of client.sendMessageStream(sendReq('slow'))) void _ev;
    })(),
  );
  expect(err.code).toBe(7);
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && s.agent.grpcCancelled.length === 0) await new Promise((r) => setTimeout(r, 20));
  expect(s.agent.grpcCancelled).toEqual(['sendStreamingMessage']);
});

describe('answers judged and replaced (INSPECT_RESPONSES)', () => {
  test("modify of a unary answer: the caller gets the guardian's replacement, re-encoded", async () => {
    s.guardian.script((env) => {
      const p = env.params.payload;
      if (p.result?.task === undefined) return { decision: 'allow' };
      const modified = structuredClone(p);
      modified.result.task.metadata = { redacted: true };
      modified.result.task.artifacts = [];
      return { decision: 'modify', modifiedPayload: modified };
    });
    const task = (await client.sendMessage(sendReq('answer to be replaced'))) as { metadata?: Record<string, unknown>; artifacts: unknown[] };
    expect(task.metadata).toEqual({ redacted: true });
    expect(task.artifacts).toEqual([]);
  });

  test('modify of a stream event: the caller gets the replacement for that event only', async () => {
    s.guardian.script((env) => {
      const p = env.params.payload;
      const au = p.result?.artifactUpdate;
      if (au === undefined) return { decision: 'allow' };
      const modified = structuredClone(p);
      modified.result.artifactUpdate.artifact.parts = [{ text: 'REPLACED' }];
      return { decision: 'modify', modifiedPayload: modified };
    });
    const events = await collect(client.sendMessageStream(sendReq('stream 2')));
    const texts = events.filter((e) => (e as { payload?: { $case: string } }).payload?.$case === 'artifactUpdate').map((e) => textOf(e));
    expect(texts).toHaveLength(2);
    for (const t of texts) expect(t).toBe('REPLACED');
  });
});

test('every gRPC call is one audit record (binding grpc), with its decision and the guardian reason', async () => {
  const records: AuditRecord[] = [];
  const config = configFrom({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    LOG_LEVEL: 'silent',
    UPSTREAM_URL: s.agent.origin,
    GUARDIAN_URL: s.guardian.url,
    GRPC_PORT: '0',
  });
  const p = await startProxy({ config, logger: createLogger('silent'), decisionLog: (r) => ({ seq: records.push(r), hash: 'h' }) });
  try {
    const { client: c } = await makeGrpcClient(p.url);
    await c.sendMessage(sendReq('audited'));
    s.guardian.script(() => ({ decision: 'deny', message: 'No.', reasonCode: ['R1'] }));
    await grpcFailure(c.getTask({ tenant: '', id: 'x', historyLength: undefined }));
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && records.length < 2) await new Promise((r) => setTimeout(r, 20));
    expect(records.map((r) => [r.fields.method, r.fields.wireMethod, r.fields.binding, r.outcome])).toEqual([
      ['message/send', 'SendMessage', 'grpc', 'forwarded'],
      ['tasks/get', 'GetTask', 'grpc', 'denied'],
    ]);
    expect(records[1]).toMatchObject({ reasonCodes: ['R1'], fields: { guardianMessage: 'No.' } });
  } finally {
    await p.close();
  }
});

describe('both roles', () => {
  test('client sidecar -> server sidecar -> agent over gRPC: both hooks judge (the server side finds its agent in the card, the client side is told by GRPC_UPSTREAM_URL)', async () => {
    const server = await s.proxy({ GRPC_PORT: '0', ROLE: 'server' });
    // A remote card may only name UPSTREAM_URL's own host and port: the server sidecar's gRPC listener is another port.
    const clientSide = await s.proxy({
      GRPC_PORT: '0',
      ROLE: 'client',
      UPSTREAM_URL: server.url,
      GRPC_UPSTREAM_URL: `http://${server.grpcAddress as string}`,
      OBSERVED_AGENT_NAME: 'caller-agent',
    });
    const { client: c, grpcUrl: u } = await makeGrpcClient(clientSide.url);
    expect(u).toBe(clientSide.grpcAddress);
    await c.sendMessage(sendReq('two hops'), { serviceParameters: { 'x-aos-reasoning': 'the user asked for two hops' } });
    const hooks = requestEnvelopes();
    expect(hooks).toHaveLength(2);
    expect(hooks[0]?.params.context.from.agent.name).toBe('caller-agent');
    expect(hooks[0]?.params.reasoning).toBe('the user asked for two hops');
    expect(hooks[1]?.params.reasoning).toBeUndefined();
    expect(rec.calls.map((x) => x.method)).toEqual(['sendMessage']);
    // Neither the reasoning nor the sidecars' own metadata reach the agent.
    expect(rec.calls[0]?.headers['x-aos-reasoning']).toBeUndefined();
    expect(rec.calls[0]?.headers['x-aos-agent-name']).toBeUndefined();
  });
});

describe('identity and task ownership (IDENTITY_POLICY=required, OIDC bearer tokens in metadata)', () => {
  test("a caller without a token is UNAUTHENTICATED; another caller's task is NOT_FOUND; the agent acts for the owner only", async () => {
    const ids = await startIdentities();
    try {
      const p = await s.proxy({ GRPC_PORT: '0', ...ids.env });
      const { client: c } = await makeGrpcClient(p.url);
      const as = (who: 'A' | 'B') => ({ serviceParameters: ids.headersAs(who) });
      expect((await grpcFailure(c.sendMessage(sendReq('anonymous')))).code).toBe(16);
      expect(rec.calls).toHaveLength(0);
      const task = (await c.sendMessage(sendReq('owned by A'), as('A'))) as { id: string };
      rec.clear();
      // Answered exactly as the agent answers a task that does not exist (the SDK reads the same error class).
      const nf = await grpcFailure(c.getTask({ tenant: '', id: task.id, historyLength: undefined }, as('B')));
      expect(rec.calls).toHaveLength(0);
      const { client: direct } = await makeGrpcClient(s.agent.url);
      const real = await grpcFailure(direct.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
      rec.clear();
      expect(nf.name).toBe(real.name);
      expect(nf.message).toBe(real.message.replace('no-such-task', task.id));
      expect(rec.calls).toHaveLength(0);
      const got = await c.getTask({ tenant: '', id: task.id, historyLength: undefined }, as('A'));
      expect(got.id).toBe(task.id);
      expect(rec.calls.map((x) => x.method)).toEqual(['getTask']);
    } finally {
      await ids.close();
    }
  });
});

describe('guardian failure modes', () => {
  test('FAIL_MODE=open: forwarded, and the agent is told it is unchecked', async () => {
    const open = await s.proxy({ GRPC_PORT: '0', FAIL_MODE: 'open' });
    const { client: c } = await makeGrpcClient(open.url);
    s.guardian.script(() => ({ fault: 'refuse' }));
    await c.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }).catch(() => undefined);
    expect(rec.calls.map((x) => x.method)).toEqual(['getTask']);
    expect(rec.calls[0]?.headers['x-aos-unchecked']).toBe('true');
  });

  test('the deadline runs out while the guardian thinks: DEADLINE_EXCEEDED, the agent never acts', async () => {
    s.guardian.script(() => ({ decision: 'allow', delayMs: 1500 }));
    const m = grpcMethodForPath('/lf.a2a.v1.A2AService/GetTask');
    if (m === undefined) throw new Error('GetTask');
    const c = codecFor(m).request;
    const a = await rawGrpc(proxy.grpcAddress as string, m.path, grpcFrame(c.encode(c.fromJson({ id: 't-x' }))), {
      'a2a-version': '1.0',
      'grpc-timeout': '200m',
    });
    expect(a.grpcStatus).toBe(4);
    await new Promise((r) => setTimeout(r, 1600));
    expect(rec.calls).toHaveLength(0);
  });
});

describe('TLS and shutdown', () => {
  test('over TLS: the SDK client with the CA reaches the agent through the proxy', async () => {
    const pki = await createPki();
    try {
      const cert = await pki.issue({ server: true, name: 'grpc-server' });
      const tls = await s.proxy({ GRPC_PORT: '0', TLS_CERT_FILE: cert.certFile, TLS_KEY_FILE: cert.keyFile });
      const dispatcher = new Agent({ connect: { ca: pki.caCert } });
      const fetchImpl = ((url: string, init?: object) => undiciFetch(url, { ...init, dispatcher })) as unknown as typeof fetch;
      const { client: c, grpcUrl: u } = await makeGrpcClient(tls.url, { fetchImpl, credentials: grpcJs.credentials.createSsl(Buffer.from(pki.caCert)) });
      expect(u).toBe(tls.grpcAddress);
      const task = (await c.sendMessage(sendReq('over tls'))) as { id: string };
      expect(task.id).toBeTruthy();
      expect(rec.calls.map((x) => x.method)).toEqual(['sendMessage']);
      await dispatcher.close();
    } finally {
      await pki.close();
    }
  });

  test('mutual TLS: the client certificate is the verified caller the guardian sees; no certificate is UNAUTHENTICATED', async () => {
    const pki = await createPki();
    const spiffe = 'spiffe://kitchen.test/ns/agents/sa/grpc-caller';
    try {
      const cert = await pki.issue({ server: true, name: 'grpc-mtls-server' });
      const clientCert = await pki.issue({ cn: 'grpc-caller', spiffe, name: 'grpc-mtls-client' });
      const p = await s.proxy({
        GRPC_PORT: '0',
        TLS_CERT_FILE: cert.certFile,
        TLS_KEY_FILE: cert.keyFile,
        TLS_CLIENT_CA_FILE: pki.caFile,
        TLS_CLIENT_CERT: 'optional',
        IDENTITY_POLICY: 'required',
      });
      const dispatcher = new Agent({ connect: { ca: pki.caCert } });
      const fetchImpl = ((url: string, init?: object) => undiciFetch(url, { ...init, dispatcher })) as unknown as typeof fetch;
      const ca = Buffer.from(pki.caCert);
      const { client: anonymous } = await makeGrpcClient(p.url, { fetchImpl, credentials: grpcJs.credentials.createSsl(ca) });
      expect((await grpcFailure(anonymous.sendMessage(sendReq('who am i')))).code).toBe(16);
      expect(rec.calls).toHaveLength(0);
      const { client: c } = await makeGrpcClient(p.url, {
        fetchImpl,
        credentials: grpcJs.credentials.createSsl(ca, Buffer.from(clientCert.key), Buffer.from(clientCert.cert)),
      });
      await c.sendMessage(sendReq('with a certificate'));
      expect(rec.calls.map((x) => x.method)).toEqual(['sendMessage']);
      const from = requestEnvelopes()[0]?.params.context.from.agent;
      expect(from.metadata.identity).toMatchObject({ verified: true, source: 'mtls', subject: spiffe });
      await dispatcher.close();
    } finally {
      await pki.close();
    }
  });

  test("towards a TLS gRPC agent (GRPC_UPSTREAM_URL https, UPSTREAM_CA_FILE): the agent's certificate is verified", async () => {
    const pki = await createPki();
    const cert = await pki.issue({ server: true, name: 'grpc-agent' });
    const tlsAgent = await startAgent({ grpc: true, grpcTls: { cert: cert.cert, key: cert.key }, wrapRequestHandler: rec.wrap });
    try {
      const env = { GRPC_PORT: '0', UPSTREAM_URL: tlsAgent.origin, GRPC_UPSTREAM_URL: `https://${tlsAgent.grpcAddress as string}` };
      const trusting = await s.proxy({ ...env, UPSTREAM_CA_FILE: pki.caFile });
      const { client: c } = await makeGrpcClient(trusting.url);
      const task = (await c.sendMessage(sendReq('to a tls agent'))) as { id: string };
      expect(task.id).toBeTruthy();
      expect(rec.calls.map((x) => x.method)).toEqual(['sendMessage']);
      // Without the CA the agent's certificate is not trusted: UNAVAILABLE, nothing sent.
      rec.clear();
      const untrusting = await s.proxy(env);
      const { client: u } = await makeGrpcClient(untrusting.url);
      expect((await grpcFailure(u.sendMessage(sendReq('not trusted')))).code).toBe(14);
      expect(rec.calls).toHaveLength(0);
    } finally {
      await tlsAgent.close();
      await pki.close();
    }
  });

  test('a drain ends an open gRPC stream with UNAVAILABLE', async () => {
    const p = await s.proxy({ GRPC_PORT: '0' });
    const { client: c } = await makeGrpcClient(p.url);
    const running = (await c.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
    const it = c.resubscribeTask({ tenant: '', id: running.id })[Symbol.asyncIterator]();
    await it.next();
    const drained = p.drain(300);
    const err = await grpcFailure(
      (async () => {
        for (;;) {
          const r = await it.next();
          if (r.done === true) throw new Error('stream ended without an error');
        }
      })(),
    );
    await drained;
    expect(err.code).toBe(14);
  });
});
