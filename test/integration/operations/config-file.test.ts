/**
 * `--config FILE` (YAML or JSON) and `--check --probe`, on the built CLI (dist/a2a-guard.js):
 *   - the file takes the variables' names and rules; a variable set in the environment wins;
 *   - unknown names get the variables' "did you mean"; bad values and duplicate keys name the file;
 *   - the proxy runs from a file alone, in front of a real SDK agent;
 *   - --probe tries the guardian (a real HTTP guardian), the agent's card and Redis, one line each;
 *   - config/config.schema.json is generated from the same table, is current, and accepts what the proxy accepts.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import YAML from 'yaml';
import { rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { deadGuardianUrl, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { ensureBuilt, MAIN, reapAll, ROOT, startProxyProcess } from '../../helpers/proxy-process';
import { schemaText, SCHEMA_FILE } from '../../../scripts/config-schema';

let agent: TestAgent;
let guardian: TestGuardian;
let redis: TestRedis;
let dir: string;

beforeAll(async () => {
  ensureBuilt();
  agent = await startAgent({ name: 'Config File Agent' });
  guardian = await startGuardian();
  redis = await startRedis();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-config-'));
}, 180_000);

afterAll(async () => {
  await reapAll();
  await agent?.close();
  await guardian?.close();
  await redis?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

function cli(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The same, without blocking this process (whose guardian, agent and Redis the command probes). */
function cliAsync(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, encoding: 'utf8', timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr });
      },
    );
  });
}

const line = (out: string, name: string) => out.split('\n').find((l) => l.startsWith(`${name}=`));

describe('--config FILE', () => {
  test('YAML: numbers, booleans and lists as the variables write them; the environment wins over the file', () => {
    const file = write(
      'a.yaml',
      [
        `UPSTREAM_URL: ${agent.origin}`,
        'PORT: 8181',
        'INSPECT_RESPONSES: true',
        'READINESS_REQUIRES: [guardian, upstream]',
        'GUARDIAN_TOKEN: s3cret-in-file',
        `GUARDIAN_URL: ${guardian.url}`,
        'ROLE: server',
        '',
      ].join('\n'),
    );
    const r = cli(['--config', file, '--check'], { A2A_GUARD_ROLE: 'both' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`# config file: ${file}`);
    expect(line(r.stdout, 'PORT')).toBe(`PORT=8181  # ${file}`);
    expect(line(r.stdout, 'INSPECT_RESPONSES')).toBe(`INSPECT_RESPONSES=true  # ${file}`);
    expect(line(r.stdout, 'READINESS_REQUIRES')).toBe(`READINESS_REQUIRES=guardian,upstream  # ${file}`);
    expect(line(r.stdout, 'ROLE')).toBe('ROLE=both');
    expect(line(r.stdout, 'GUARDIAN_TOKEN')).toBe(`GUARDIAN_TOKEN=***  # ${file}`);
    expect(r.stdout).not.toContain('s3cret-in-file');
  });

  test('JSON is read the same way', () => {
    const file = write('a.json', JSON.stringify({ UPSTREAM_URL: agent.origin, GUARDIAN_TIMEOUT_MS: 1234, SHADOW_MODE: false }));
    const r = cli(['--check', '--config', file]);
    expect(r.status).toBe(0);
    expect(line(r.stdout, 'GUARDIAN_TIMEOUT_MS')).toBe(`GUARDIAN_TIMEOUT_MS=1234  # ${file}`);
  });

  test('unknown names get the variables\' "did you mean"; bad values and duplicate keys name the file; exit 2', () => {
    const typos = write('typos.yaml', `UPSTREAM_URL: ${agent.origin}\nGAURDIAN_URL: http://guardian:7070\nA2A_GUARD_PORT: 1\nWHATEVER: 1\n`);
    const t = cli(['--config', typos, '--check']);
    expect(t.status).toBe(2);
    expect(t.stderr.split('\n').filter((l) => l !== '')).toEqual([
      `a2a-guard: configuration error: ${typos}: A2A_GUARD_PORT: write it as PORT (the A2A_GUARD_ prefix is for the environment)`,
      `a2a-guard: configuration error: ${typos}: GAURDIAN_URL: unknown variable; did you mean GUARDIAN_URL?`,
      `a2a-guard: configuration error: ${typos}: WHATEVER: unknown variable (a2a-guard --help lists the names)`,
    ]);
    const bad = write('bad.yaml', `UPSTREAM_URL: ${agent.origin}\nPORT: 70000\nFAIL_MODE: maybe\nCARD_PATHS: {a: 1}\n`);
    const b = cli(['--config', bad, '--check']);
    expect(b.status).toBe(2);
    expect(b.stderr).toBe(`a2a-guard: configuration error: ${bad}: CARD_PATHS: must be a string, number, boolean or list of them\n`);
    const bad2 = write('bad2.yaml', `UPSTREAM_URL: ${agent.origin}\nPORT: 70000\nFAIL_MODE: maybe\n`);
    const b2 = cli(['--config', bad2, '--check']);
    expect(b2.stderr).toBe(
      [
        `a2a-guard: configuration error: ${bad2}: PORT="70000": must be at most 65535`,
        `a2a-guard: configuration error: ${bad2}: FAIL_MODE="maybe": Invalid option: expected one of "closed"|"open"`,
        '',
      ].join('\n'),
    );
    // The environment's value is the one checked (and named).
    expect(cli(['--config', bad2, '--check'], { PORT: '1', FAIL_MODE: 'open' }).status).toBe(0);
    const dup = write('dup.yaml', `UPSTREAM_URL: ${agent.origin}\nFAIL_MODE: open\nFAIL_MODE: closed\n`);
    const d = cli(['--config', dup, '--check']);
    expect(d.status).toBe(2);
    expect(d.stderr).toMatch(new RegExp(`^a2a-guard: configuration error: ${dup.replace(/[.]/g, '\\.')}: not valid YAML or JSON: .*unique`));
    expect(cli(['--config', path.join(dir, 'missing.yaml'), '--check']).stderr).toContain('cannot read it: ENOENT');
    expect(cli(['--config']).stderr).toBe('a2a-guard: --config takes a file name (YAML or JSON)\n');
  });

  test('the proxy runs configured by the file alone', async () => {
    const file = write('run.yaml', `UPSTREAM_URL: ${agent.origin}\nGUARDIAN_URL: ${guardian.url}\n`);
    guardian.script(() => ({ decision: 'deny', reasonCode: ['FROM_FILE'], message: 'denied' }));
    try {
      const run = await startProxyProcess({}, undefined, undefined, ['--config', file]);
      const r = await rawRpc(`${run.base}/a2a/jsonrpc`, {
        jsonrpc: '2.0',
        id: 'f',
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-f', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
      });
      expect(r.json.error.code).toBe(-31403);
      expect(guardian.calls().length).toBeGreaterThan(0);
    } finally {
      guardian.reset();
    }
  }, 30_000);
});

describe('--check --probe', () => {
  test('a guardian, an agent and a Redis that answer: one ok line each, exit 0', async () => {
    const r = await cliAsync(['--check', '--probe'], {
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      TASK_OWNERSHIP: 'true',
      TASK_STORE_URL: redis.url,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n').filter((l) => l.startsWith('# probe'))).toEqual([
      `# probe guardian: ok: ${guardian.url.replace(/\/?$/, '/')}: answered AOS ping`,
      `# probe agent card: ok: ${agent.origin}: card served`,
      `# probe task store: ok: ${redis.url.replace(/\/?$/, '')}: answered PING`,
    ]);
    expect(r.status).toBe(0);
  }, 30_000);

  test('a wrong GUARDIAN_URL (the agent itself), a dead agent and a stopped Redis: FAILED lines, exit 1', async () => {
    const dead = await deadGuardianUrl();
    const r = await cliAsync(['--check', '--probe'], {
      UPSTREAM_URL: dead,
      GUARDIAN_URL: agent.origin,
      TASK_OWNERSHIP: 'true',
      TASK_STORE_URL: `redis://127.0.0.1:${new URL(dead).port}`,
    });
    expect(r.status).toBe(1);
    const probes = r.stdout.split('\n').filter((l) => l.startsWith('# probe'));
    expect(probes).toEqual([
      expect.stringMatching(/^# probe guardian: FAILED: .*no valid AOS ping answer/),
      expect.stringMatching(/^# probe agent card: FAILED: /),
      expect.stringMatching(/^# probe task store: FAILED: /),
    ]);
  }, 30_000);
});

describe('config/config.schema.json', () => {
  test('is current (npm run config:schema writes it)', () => {
    expect(fs.readFileSync(path.join(ROOT, SCHEMA_FILE), 'utf8')).toBe(schemaText());
  });

  test('accepts the files the proxy accepts and refuses unknown names and wrong types', () => {
    const ajv = new Ajv2020({ strict: false });
    const valid = ajv.compile(JSON.parse(fs.readFileSync(path.join(ROOT, SCHEMA_FILE), 'utf8')));
    const good = YAML.parse(
      `UPSTREAM_URL: http://agent:8000\nPORT: 8080\nINSPECT_RESPONSES: true\nREADINESS_REQUIRES: [guardian]\nROLE: both\nOTEL_TRACES_SAMPLER_ARG: 0.5\nPOLICY_FILE:\n`,
    );
    expect(valid(good)).toBe(true);
    expect(valid({ GAURDIAN_URL: 'http://g' })).toBe(false);
    expect(valid({ ROLE: 'sever' })).toBe(false);
    expect(valid({ PORT: 'eighty' })).toBe(false);
    expect(valid({ CARD_PATHS: { a: 1 } })).toBe(false);
  });
});
