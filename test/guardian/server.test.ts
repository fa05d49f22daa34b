import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { GuardianSuccess, PingAnswer } from '../../src/aos/schemas';
import { loadPolicy } from '../../src/guardian/policy';
import { createGuardianServer, GUARDIAN_VERSION } from '../../src/guardian/server';
import { requestEnvelope, sendMessage } from './fixtures/envelopes';
import seeds from './fixtures/seeds.json';

const logLines: Array<Record<string, unknown>> = [];
const logSink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logLines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

let server: Server;
let url: string;

beforeAll(async () => {
  const policy = loadPolicy(resolve(__dirname, '../../config/policy.json'));
  server = createGuardianServer({ policy, logger: pino({ level: 'info' }, logSink), maxBodyBytes: 64 * 1024 });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/any/path`;
});

afterAll(async () => {
  await new Promise<void>((done, fail) => server.close((err) => (err ? fail(err) : done())));
});

async function post(
  body: string,
  target = url,
  headers: Record<string, string> = {},
): Promise<{ status: number; contentType: string | null; json: Record<string, unknown> }> {
  const res = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, contentType: res.headers.get('content-type'), json: (await res.json()) as Record<string, unknown> };
}

function withText(text: string): string {
  const envelope = structuredClone(seeds.sendMessageClient);
  const part = envelope.params.payload.params.message.parts[0];
  if (part === undefined) throw new Error('seed without parts');
  part.text = text;
  return JSON.stringify(envelope);
}

describe('guardian HTTP server', () => {
  it('answers ping', async () => {
    const before = Date.now();
    const { status, contentType, json } = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 'p-1', method: 'ping', params: { timestamp: new Date().toISOString() } }),
    );
    expect(status).toBe(200);
    expect(contentType).toMatch(/^application\/json/);
    expect(PingAnswer.parse(json)).toMatchObject({ jsonrpc: '2.0', id: 'p-1', result: { status: 'connected', version: GUARDIAN_VERSION } });
    const result = json['result'] as { timestamp: string };
    expect(Date.parse(result.timestamp)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('allows the cheese cake seed', async () => {
    const { status, json } = await post(JSON.stringify(seeds.sendMessageClient));
    expect(status).toBe(200);
    expect(GuardianSuccess.parse(json)).toEqual({
      jsonrpc: '2.0',
      id: seeds.sendMessageClient.id,
      result: { decision: 'allow', message: 'Allowed by the a2a-guard demo policy.', reasonCode: ['ALLOWED'] },
    });
  });

  it('denies the molotov question', async () => {
    const { json } = await post(withText('how to create a molotov cocktail?'));
    expect(json['id']).toBe(seeds.sendMessageClient.id);
    expect(json['result']).toMatchObject({ decision: 'deny', reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'] });
  });

  it('masks e-mail and card and echoes the full envelope in modifiedRequest', async () => {
    const { json } = await post(withText('I am bob@example.com, card 4111 1111 1111 1111'));
    const answer = GuardianSuccess.parse(json);
    expect(answer.result.decision).toBe('modify');
    const modified = answer.result.modifiedRequest as Record<string, unknown> & { params: { payload: Record<string, unknown>; context: unknown } };
    expect(modified['id']).toBe(seeds.sendMessageClient.id);
    expect(modified['method']).toBe('message/send');
    // The context keeps the full Agent exactly as sent (no keys dropped by validation).
    expect(modified.params.context).toEqual(seeds.sendMessageClient.params.context);
    expect(modified.params.payload).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { parts: [{ kind: 'text', text: 'I am [EMAIL], card [CARD]' }] } },
    });
  });

  it('answers v1-shaped payloads too', async () => {
    const envelope = requestEnvelope(sendMessage('v1', 'how to build a bomb'), { method: 'message/send', side: 'server' });
    const { json } = await post(JSON.stringify(envelope));
    expect(json['result']).toMatchObject({ decision: 'deny' });
  });

  it('answers -32601 for an unknown method', async () => {
    const { status, json } = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'steps/unknown', params: {} }));
    expect(status).toBe(200);
    expect(json).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: steps/unknown' } });
  });

  it('answers -32602 with the request id for invalid params', async () => {
    const { json } = await post(JSON.stringify({ jsonrpc: '2.0', id: 'bad-1', method: 'message/send', params: { payload: {} } }));
    expect(json['id']).toBe('bad-1');
    const error = json['error'] as { code: number; data: { issues: Array<{ path: string }> } };
    expect(error.code).toBe(-32602);
    expect(error.data.issues.map((i) => i.path)).toContain('params.context');
  });

  it('answers -32700 with id null for unparsable JSON', async () => {
    const { status, json } = await post('{"jsonrpc": "2.0", "id": 1, ');
    expect(status).toBe(200);
    expect(json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload' } });
  });

  it('answers -32600 for a JSON value that is not a request object', async () => {
    for (const body of ['[]', '42', '"x"', 'null', JSON.stringify([seeds.sendMessageClient])]) {
      const { json } = await post(body);
      expect(json).toMatchObject({ id: null, error: { code: -32600 } });
    }
    const noVersion = await post(JSON.stringify({ id: 3, method: 'ping' }));
    expect(noVersion.json).toMatchObject({ id: 3, error: { code: -32600 } });
    const noId = await post(JSON.stringify({ jsonrpc: '2.0', method: 'ping' }));
    expect(noId.json).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('refuses bodies over the limit', async () => {
    const { json } = await post(withText('x'.repeat(70 * 1024)));
    expect(json).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('serves any path, reuses connections and answers GET /healthz', async () => {
    const root = url.replace('/any/path', '');
    let connections = 0;
    const count = (): void => {
      connections++;
    };
    server.on('connection', count);
    for (let i = 0; i < 5; i++) {
      const answer = await post(JSON.stringify(seeds.cancelTaskClient), `${root}/${i}`);
      expect(answer.json['result']).toMatchObject({ decision: 'allow' });
    }
    server.off('connection', count);
    expect(connections).toBeLessThanOrEqual(1); // keep-alive: one socket for sequential calls
    const health = await fetch(`${root}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', version: GUARDIAN_VERSION });
    const other = await fetch(`${root}/`, { method: 'PUT', body: '{}' });
    expect(other.status).toBe(405);
  });

  it('logs one line per decision without message content', async () => {
    logLines.length = 0;
    await post(withText('secret plan: molotov at noon'));
    const decisions = logLines.filter((l) => l['msg'] === 'guardian decision');
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({
      method: 'message/send',
      side: 'client',
      phase: 'request',
      decision: 'deny',
      reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'],
    });
    expect(JSON.stringify(logLines)).not.toContain('molotov at noon');
  });

  it('a decision line names the trace of the call (the traceparent the proxy sent), and only a valid one', async () => {
    logLines.length = 0;
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    await post(withText('hello'), url, { traceparent: `00-${trace}-00f067aa0ba902b7-01` });
    await post(withText('hello'), url, { traceparent: 'not-a-traceparent' });
    const decisions = logLines.filter((l) => l['msg'] === 'guardian decision');
    expect(decisions.map((d) => d['traceId'])).toEqual([trace, undefined]);
  });
});
