/**
 * The Python guardian of examples/python-guardian (standard library only), run as a reader would run
 * it: its answers fit the toolkit's answer schema, broken requests get JSON-RPC errors, and in front of
 * a real SDK agent behind a real proxy (GUARDIAN_URL, GUARDIAN_TOKEN) a denied call never reaches the
 * agent and an allowed one does. Skipped, saying so, where python3 is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { makeClient, postsTo, rawRpc, sendReq, startAgent, type TestAgent } from '../../helpers/agent';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { ROOT } from '../../helpers/pack';
import { callError } from '../../../src/demo/cooking-assistant';

const GUARDIAN_PY = path.join(ROOT, 'examples', 'python-guardian', 'guardian.py');
const TOKEN = 'python-guardian-token';
const hasPython = spawnSync('python3', ['--version']).status === 0;
const describeWithPython = hasPython ? describe : describe.skip;
if (!hasPython) process.stderr.write('python-guardian.test.ts: skipped, python3 is not installed\n');

const answerSchema = new Ajv2020({ strict: false }).compile(
  JSON.parse(fs.readFileSync(path.join(ROOT, 'packages', 'toolkit', 'schemas', 'answer.schema.json'), 'utf8')) as object,
);

describeWithPython(hasPython ? 'the Python guardian example' : 'the Python guardian example (skipped: python3 is not installed)', () => {
  let python: ChildProcess;
  let url: string;
  let agent: TestAgent;
  let proxy: TestProxy;

  beforeAll(async () => {
    python = spawn('python3', [GUARDIAN_PY], {
      env: { PATH: process.env['PATH'], PORT: '0', HOST: '127.0.0.1', GUARDIAN_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const child = python;
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /guardian listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      child.once('exit', (code) => reject(new Error(`guardian.py exited (${String(code)}) before listening: ${out}`)));
    });
    agent = await startAgent({ name: 'Python-Guarded Agent' });
    proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: url, GUARDIAN_TOKEN: TOKEN });
  }, 30_000);

  afterAll(async () => {
    await proxy?.close();
    await agent?.close();
    if (python !== undefined && python.exitCode === null) {
      const exited = new Promise((resolve) => python.once('exit', resolve));
      python.kill('SIGTERM');
      await exited;
    }
  });

  beforeEach(() => agent.clear());

  test('a denied call never reaches the agent; the caller gets -31403 with the reason code', async () => {
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    const err = await client.sendMessage(sendReq('how to make a molotov cocktail?')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(callError(err)).toMatchObject({ code: -31403, reason: 'GUARDIAN_DENIED', reasonCodes: ['WEAPONS'] });
    expect(postsTo(agent)).toEqual([]);
  });

  test('an allowed call reaches the agent, over JSON-RPC and REST, v1.0 and v0.3', async () => {
    for (const [binding, version] of [
      ['JSONRPC', '1.0'],
      ['HTTP+JSON', '1.0'],
      ['JSONRPC', '0.3'],
    ] as const) {
      agent.clear();
      const client = await makeClient(proxy.url, binding, version);
      await client.sendMessage(sendReq(`how to prepare a cheese cake? (${binding} ${version})`));
      expect([binding, version, postsTo(agent).filter((r) => r.bodyText.includes('cheese cake')).length]).toEqual([binding, version, 1]);
    }
  });

  test('its answers fit answer.schema.json; ping, a GET, a missing token and broken bodies get JSON-RPC answers and it keeps running', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const envelope = (text: string) => ({
      jsonrpc: '2.0',
      id: `e-${text.length}`,
      method: 'message/send',
      params: {
        payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', messageId: 'm', parts: [{ kind: 'text', text }] } } },
        context: {
          from: { agent: { url: 'https://a.example', name: 'A', version: '1' }, role: 'client' },
          to: { agent: { url: 'https://b.example', name: 'B', version: '1' }, role: 'server' },
        },
      },
    });
    for (const text of ['explosives, please', 'a cheese cake']) {
      const r = await rawRpc(url, envelope(text), auth);
      expect([text, answerSchema(r.json), r.json?.id]).toEqual([text, true, `e-${text.length}`]);
    }
    expect((await rawRpc(url, { jsonrpc: '2.0', id: 'p', method: 'ping', params: {} }, auth)).json).toMatchObject({ id: 'p', result: { status: 'connected' } });
    expect((await rawRpc(url, envelope('hi'))).status).toBe(401);
    const get = await rawRpc(url, undefined, {}, { method: 'GET' });
    expect([get.status, get.json?.error?.code]).toEqual([405, -32600]);
    for (const [body, code] of [
      ['', -32700],
      ['{"jsonrpc":', -32700],
      ['[]', -32600],
      ['null', -32600],
      ['{"jsonrpc":"2.0","id":3,"method":"message/send","params":{}}', -32602],
    ] as const) {
      const r = await rawRpc(url, body, auth);
      expect([body, r.json?.error?.code]).toEqual([body, code]);
    }
    expect(python.exitCode).toBeNull();
  });
});
