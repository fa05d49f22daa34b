/**
 * The proxy as an operator starts it (design section 8, 11): `node dist/src/main.js` configured only by
 * environment variables.
 *   - invalid configuration stops the process at start: exit code 2, one stderr line per problem, each
 *     naming its variable, nothing listening;
 *   - a good configuration serves an A2A call through the guardian, and SIGTERM ends it with exit code 0.
 */
import { rawRpc, startAgent, textOf, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { ensureBuilt, MAIN_FILES, reapAll, spawnNode, startProxyProcess, type ChildRun, type Exit } from '../../helpers/proxy-process';
import { freePort } from '../../helpers/net';

beforeAll(() => ensureBuilt(), 180_000);

afterEach(async () => {
  await reapAll();
});

/** Spawn the proxy with exactly `env` (plus PATH): nothing leaks in from the test runner's environment. */
const start = (env: Record<string, string>): ChildRun => spawnNode(MAIN_FILES, env);

/** Wait for exit, at most `ms` (a process that keeps running is killed and reported as such). */
const exitWithin = (run: ChildRun, ms: number): Promise<Exit> => run.exitWithin(ms);

describe('invalid configuration: exit code 2, one stderr line per problem', () => {
  let ports: { PORT: string; ADMIN_PORT: string };
  beforeAll(async () => {
    // Should a bad value be accepted by mistake, the process must not grab 8080/9090.
    ports = { PORT: String(await freePort()), ADMIN_PORT: String(await freePort()) };
  });
  const base = () => ({ UPSTREAM_URL: 'http://127.0.0.1:9/', HOST: '127.0.0.1', ADMIN_HOST: '127.0.0.1', ...ports });

  test.each<[string, (b: Record<string, string>) => Record<string, string>, string[]]>([
    ['UPSTREAM_URL missing', ({ UPSTREAM_URL: _u, ...rest }) => rest, ['UPSTREAM_URL']],
    ['ROLE=banana', (b) => ({ ...b, ROLE: 'banana' }), ['ROLE']],
    ['PORT=abc', (b) => ({ ...b, PORT: 'abc' }), ['PORT']],
    ['FAIL_MODE=x', (b) => ({ ...b, FAIL_MODE: 'x' }), ['FAIL_MODE']],
    ['GUARDIAN_URL=not-a-url', (b) => ({ ...b, GUARDIAN_URL: 'not-a-url' }), ['GUARDIAN_URL']],
    ['UPSTREAM_URL=not-a-url', (b) => ({ ...b, UPSTREAM_URL: 'not-a-url' }), ['UPSTREAM_URL']],
    ['GUARDIAN_TIMEOUT_MS=soon', (b) => ({ ...b, GUARDIAN_TIMEOUT_MS: 'soon' }), ['GUARDIAN_TIMEOUT_MS']],
    [
      'several at once',
      ({ UPSTREAM_URL: _u, ...rest }) => ({ ...rest, ROLE: 'banana', PORT: 'abc', FAIL_MODE: 'x', GUARDIAN_URL: 'not-a-url' }),
      ['UPSTREAM_URL', 'ROLE', 'PORT', 'FAIL_MODE', 'GUARDIAN_URL'],
    ],
  ])('%s', async (_name, make, vars) => {
    const run = start(make(base()));
    const { code } = await exitWithin(run, 20_000);
    expect({ code, stderr: run.stderr() }).toEqual({ code: 2, stderr: expect.any(String) });
    const lines = run
      .stderr()
      .split('\n')
      .filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(vars.length);
    for (const v of vars) {
      const naming = lines.filter((l) => new RegExp(`(^|[^A-Z_])${v}([^A-Z_]|$)`).test(l));
      expect({ variable: v, lines: naming }).toEqual({ variable: v, lines: [expect.any(String)] });
    }
    expect(run.stdout()).not.toMatch(/listening/i);
  });
});

describe('a good configuration', () => {
  let agent: TestAgent;
  let guardian: TestGuardian;
  beforeAll(async () => {
    agent = await startAgent({ name: 'CLI Agent' });
    guardian = await startGuardian();
  });
  afterAll(async () => {
    await agent?.close();
    await guardian?.close();
  });

  test('serves a call through the guardian, then SIGTERM -> exit code 0', async () => {
    const run = await startProxyProcess(
      { UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', DRAIN_TIMEOUT_MS: '5000' },
      { script: MAIN_FILES },
    );
    const { base } = run;
    // The proxy serves the (rewritten) agent card.
    const r = await fetch(`${base}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    expect(r.status).toBe(200);
    const card: any = await r.json();
    expect(card.name).toBe('CLI Agent');
    for (const i of card.supportedInterfaces) expect(new URL(i.url).origin).toBe(base);

    const res = await rawRpc(`${base}/a2a/jsonrpc`, {
      jsonrpc: '2.0',
      id: 'cli-1',
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'cli', role: 'user', parts: [{ kind: 'text', text: 'from the command line' }] } },
    });
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 'cli-1', result: { kind: 'task' } });
    expect(textOf(res.json)).toBe('echo: from the command line');
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send']);
    expect(agent.received.filter((r) => r.method === 'POST')).toHaveLength(1);

    const health = await fetch(`${run.admin}/healthz`);
    expect(health.status).toBe(200);
    await health.body?.cancel();

    run.child.kill('SIGTERM');
    const { code, signal } = await exitWithin(run, 20_000);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(run.stderr()).not.toMatch(/configuration error/);
  });
});
