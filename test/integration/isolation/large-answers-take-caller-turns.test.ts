/**
 * A guardian's large answer is read on the proxy's thread a piece at a time (a remote guardian's answer; the embedded
 * guardian's large modify): each piece waits for its caller's fair turn, as every other costly step of a large call
 * does, so one caller's large answers take one piece per round between other callers' work. Shown with a real HTTP
 * guardian answering a 1 MiB modify, the embedded guardian masking a 600 KiB call, and a real proxy that shares its
 * turns with its guardian.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { HttpGuardian, type CallerTurn } from '../../../src/aos/guardian';
import type { Envelope } from '../../../src/aos/schemas';
import { Cancellation } from '../../../src/core/cancel';
import { nextTurn } from '../../../src/core/turns';
import { embeddedGuardian, type EmbeddedGuardian } from '../../../src/guardian/embedded';
import { rawRpc } from '../../helpers/agent';
import { closeServer, listen, recordingUpstream } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';
import { requestEnvelope } from '../../guardian/fixtures/envelopes';

jest.setTimeout(60_000);

const POLICY = { mask: [{ id: 'pii', detectors: ['email'] }] };
let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-caller-turns-'));
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A turn that notes whose it was. */
function recording(): { keys: string[]; turn: CallerTurn } {
  const keys: string[] = [];
  return { keys, turn: (key) => (keys.push(key), nextTurn()) };
}

const send = (text: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text }] } },
});

function masking(): EmbeddedGuardian {
  const file = path.join(dir, `policy-${closers.length}.json`);
  fs.writeFileSync(file, JSON.stringify(POLICY));
  const g = embeddedGuardian(file, { timeoutMs: 30_000 });
  closers.push(() => g.close());
  return g;
}

/** A remote guardian that answers every envelope with a modify of ~1 MiB (a large answer); closed after the test. */
async function modifyingGuardian(): Promise<{ payload: ReturnType<typeof send>; url: string }> {
  const payload = send(`masked ${'1 '.repeat(512 * 1024)}`);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const env = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      const result = { decision: 'modify', message: 'masked', modifiedRequest: { method: 'message/send', params: { payload } } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: env.id, result }));
    });
  });
  const url = await listen(server);
  closers.push(() => closeServer(server));
  return { payload, url };
}

test("a remote guardian's large answer is read in its caller's turns", async () => {
  const { payload, url } = await modifyingGuardian();
  const guardian = new HttpGuardian({ url: new URL(url), timeoutMs: 30_000 });
  closers.push(() => Promise.resolve(guardian.close()));
  const { keys, turn } = recording();
  guardian.shareTurns(turn);
  const envelope = { jsonrpc: '2.0', id: 'e-1', method: 'message/send', params: {} } as unknown as Envelope;

  const outcome = await guardian.decide(envelope, JSON.stringify(envelope), new Cancellation(), undefined, 'call', 'caller-a');
  expect(outcome.ok && outcome.result.decision).toBe('modify');
  expect(outcome.ok && outcome.payloadBytes?.toString()).toBe(JSON.stringify(payload));
  expect(keys.length).toBeGreaterThan(1);
  expect(new Set(keys)).toEqual(new Set(['caller-a']));

  // A decision asked without a caller to share turns with reads in plain turns.
  keys.length = 0;
  expect((await guardian.decide(envelope, JSON.stringify(envelope))).ok).toBe(true);
  expect(keys).toEqual([]);
});

test('a large answer that came in time but cannot be read in time is denied, never "no answer" (FAIL_MODE=open would pass it)', async () => {
  const { url } = await modifyingGuardian();
  const guardian = new HttpGuardian({ url: new URL(url), timeoutMs: 3000 });
  closers.push(() => Promise.resolve(guardian.close()));
  // The caller's turns come late (a caller slowing its own turns with other large calls): the budget ends while reading.
  guardian.shareTurns(() => new Promise((r) => setTimeout(r, 3200)));
  const envelope = { jsonrpc: '2.0', id: 'e-3', method: 'message/send', params: {} } as unknown as Envelope;
  const outcome = await guardian.decide(envelope, JSON.stringify(envelope), new Cancellation(), undefined, 'call', 'caller-c');
  expect(outcome).toMatchObject({ ok: true, result: { decision: 'deny', reasonCode: ['PAYLOAD_TOO_COMPLEX'] } });
});

test("the embedded guardian's large modify is parsed in its caller's turns", async () => {
  const g = masking();
  const { keys, turn } = recording();
  g.shareTurns?.(turn);
  const envelope = requestEnvelope(send(`write to eve@example.com ${'1 '.repeat(300 * 1024)}`));
  const outcome = await g.decide(envelope, JSON.stringify(envelope), new Cancellation(), undefined, 'call', 'caller-b');
  expect(outcome.ok && outcome.result.decision).toBe('modify');
  expect(keys.length).toBeGreaterThan(0);
  expect(new Set(keys)).toEqual(new Set(['caller-b']));
});

test('the proxy shares its per-caller turns with its guardian: a large modify through it takes the caller’s turns', async () => {
  const upstream = await recordingUpstream();
  closers.push(() => upstream.close());
  const g = masking();
  const keys: string[] = [];
  const share = g.shareTurns?.bind(g);
  g.shareTurns = (turn) => share?.((key, caller) => (keys.push(key), turn(key, caller)));
  const proxy = await startTestProxy({ UPSTREAM_URL: upstream.url, MAX_BODY_BYTES: String(4 * 1024 * 1024) }, g);
  closers.push(() => proxy.close());

  const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send(`write to eve@example.com ${'1 '.repeat(300 * 1024)}`));
  expect(r.json).toMatchObject({ result: { kind: 'message' } });
  const posts = upstream.posts();
  expect(posts).toHaveLength(1);
  expect(posts[0]!.body).not.toContain('eve@example.com');
  expect(keys.length).toBeGreaterThan(0);
  expect(new Set(keys).size).toBe(1);
});
