/**
 * The bundle run from a directory laid out as the image's (dist/ with the loader, the bundle and its
 * cache), but with only undici in node_modules, on the paths that load lazily since the lean-start
 * commits: the AOS zod schemas (a guardian JSON-RPC error, a schema-failing answer, a malformed
 * error member), the duplicate-member refusal, and node:zlib (gzip, zlib and raw deflate, brotli
 * bodies, all at once as the first compressed calls). Each refusal forwards nothing; each compressed
 * call is judged and answered; the process stays up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { postsTo, startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian, type GuardianReply } from '../../helpers/guardian';
import { freePort, waitFor } from '../../helpers/net';
import { reap } from '../../helpers/process';
import { ensureBuilt, ROOT } from '../../helpers/proxy-process';

jest.setTimeout(60_000);

let agent: TestAgent;
let guardian: TestGuardian;
let dir: string;
let child: ChildProcess;
let port: number;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent();
  guardian = await startGuardian();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-lazy-'));
  fs.mkdirSync(path.join(dir, 'dist'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  for (const f of ['a2a-guard.js', 'a2a-guard.bundle.js', 'a2a-guard.bundle.cache']) fs.copyFileSync(path.join(ROOT, 'dist', f), path.join(dir, 'dist', f));
  fs.symlinkSync(path.join(ROOT, 'node_modules', 'undici'), path.join(dir, 'node_modules', 'undici'));
  port = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    LOG_LEVEL: 'error',
  };
  child = spawn(process.execPath, ['dist/a2a-guard.js'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] });
  await waitFor(
    () =>
      fetch(`http://127.0.0.1:${port}/.well-known/agent-card.json`).then(
        (r) => r.ok,
        () => false,
      ),
    15_000,
    'the bundled proxy',
  );
}, 180_000);

afterAll(async () => {
  if (child !== undefined) await reap(child);
  await agent?.close();
  await guardian?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const call = (text: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: `m-${text}`, role: 'ROLE_USER', parts: [{ text }] } } });
const post = (body: Buffer | string, encoding?: string): Promise<string> =>
  fetch(`http://127.0.0.1:${port}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...(encoding === undefined ? {} : { 'content-encoding': encoding }) },
    body,
  }).then((r) => r.text());

test('guardian answers the hand-written checks reject (zod loaded lazily) and a duplicate member: -31503, nothing forwarded', async () => {
  const raw = (body: string): GuardianReply => ({ raw: { status: 200, body } });
  const answers: Record<string, (id: string) => GuardianReply> = {
    rpcError: () => ({ fault: 'rpcError' }),
    badSchema: () => ({ fault: 'badSchema' }),
    malformedError: (id) => raw(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":"nope"}`),
    duplicate: (id) => raw(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"decision":"deny","message":"no","decision":"allow"}}`),
  };
  const seen: Record<string, string> = {};
  for (const [name, answer] of Object.entries(answers)) {
    guardian.script((env) => answer(env.id as string));
    agent.clear();
    const text = await post(call(name));
    seen[name] = `${/"code":(-?\d+)/.exec(text)?.[1] ?? text.slice(0, 80)} forwarded=${postsTo(agent, 'SendMessage').length}`;
  }
  expect(seen).toEqual(Object.fromEntries(Object.keys(answers).map((k) => [k, '-31503 forwarded=0'])));
  expect(child.exitCode).toBeNull();
});

test('compressed bodies (node:zlib loaded lazily), four at once as the first: judged and answered', async () => {
  guardian.reset();
  const body = call('zipped');
  const texts = await Promise.all([
    post(zlib.gzipSync(body), 'gzip'),
    post(zlib.deflateSync(body), 'deflate'),
    post(zlib.deflateRawSync(body), 'deflate'),
    post(zlib.brotliCompressSync(body), 'br'),
  ]);
  for (const t of texts) expect(t).toContain('echo: zipped');
  expect(guardian.calls().length).toBeGreaterThanOrEqual(4);
});
