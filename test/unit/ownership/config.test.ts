/** Task ownership variables: the default rule, validation, and the store that would sit unused. */
import { loadConfig } from '../../../src/config/config';

const base = { UPSTREAM_URL: 'http://127.0.0.1:9000' };
const oidc = { OIDC_ISSUER: 'https://idp.example', OIDC_AUDIENCE: 'agent' };
const cfg = (env: Record<string, string>) => {
  const r = loadConfig({ ...base, ...env });
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config.ownership;
};
const problems = (env: Record<string, string>) => {
  const r = loadConfig({ ...base, ...env });
  return r.ok ? [] : r.problems;
};

test('off by default; on by default for ROLE=server with IDENTITY_POLICY=required; TASK_OWNERSHIP decides when set', () => {
  expect(cfg({}).enabled).toBe(false);
  expect(cfg({ IDENTITY_POLICY: 'optional', ...oidc }).enabled).toBe(false);
  expect(cfg({ IDENTITY_POLICY: 'required', ...oidc }).enabled).toBe(true);
  expect(cfg({ IDENTITY_POLICY: 'required', ...oidc, TASK_OWNERSHIP: 'false' }).enabled).toBe(false);
  expect(cfg({ TASK_OWNERSHIP: 'true' }).enabled).toBe(true);
  expect(cfg({ ROLE: 'client', IDENTITY_POLICY: 'required' }).enabled).toBe(false);
});

test('defaults: in memory, 100,000 bindings in 32 MiB, 50,000 per caller, 7 days, 250 ms, one prefix, no eviction', () => {
  expect(cfg({ TASK_OWNERSHIP: 'true' })).toEqual({
    enabled: true,
    storeUrl: undefined,
    prefix: 'a2a-guard:tasks:',
    timeoutMs: 250,
    maxEntries: 100_000,
    maxBytes: 32 * 1024 * 1024,
    maxPerCaller: 50_000,
    allowEviction: false,
    ttlSeconds: 604_800,
  });
  expect(cfg({ TASK_OWNERSHIP: 'true', TASK_STORE_URL: 'rediss://:pw@redis.internal:6380/2' }).storeUrl).toBe('rediss://:pw@redis.internal:6380/2');
});

test('bad values and a store while ownership is off are refused at start, one line each', () => {
  // The URL may carry a password: never echoed.
  expect(problems({ TASK_OWNERSHIP: 'true', TASK_STORE_URL: 'http://:secret@redis:6379' })).toEqual([
    'TASK_STORE_URL="***": must be a redis:// or rediss:// URL',
  ]);
  expect(problems({ TASK_OWNERSHIP: 'maybe' })[0]).toMatch(/^TASK_OWNERSHIP="maybe": /);
  expect(problems({ TASK_OWNERSHIP: 'true', TASK_STORE_TIMEOUT_MS: '0' })[0]).toMatch(/^TASK_STORE_TIMEOUT_MS="0": must be at least 1/);
  expect(problems({ TASK_OWNERSHIP: 'true', TASK_OWNERSHIP_TTL_SECONDS: '5' })[0]).toMatch(/^TASK_OWNERSHIP_TTL_SECONDS="5": must be at least 60/);
  expect(problems({ TASK_STORE_URL: 'redis://redis:6379' })).toEqual([
    'TASK_STORE_URL: set, but task ownership is off; set TASK_OWNERSHIP=true (or remove TASK_STORE_URL)',
  ]);
  expect(problems({ TASK_OWNERSHP: 'true' })[0]).toMatch(/did you mean TASK_OWNERSHIP/);
});
