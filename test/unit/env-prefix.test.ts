/**
 * Every variable also as A2A_GUARD_<NAME>, and the prefixed form wins (src/core/env.ts), for the proxy
 * (loadConfig) and the reference guardian (readGuardianConfig); the health check reads the same.
 * The case that motivated it: Kubernetes service links (`<SERVICE>_PORT=tcp://10.0.0.7:7070`).
 */
import { loadConfig, type Config } from '../../src/config/config';
import { ENV_PREFIX, lookupEnv } from '../../src/core/env';
import { readGuardianConfig } from '../../src/guardian/main';
import { healthUrl } from '../../src/healthcheck';

/** What a Service named guardian, admin or upstream injects into every pod with service links on. */
const SERVICE_LINKS = {
  GUARDIAN_PORT: 'tcp://10.96.0.7:7070',
  GUARDIAN_HOST: '10.96.0.7',
  ADMIN_PORT: 'tcp://10.96.0.8:9090',
  PORT: 'tcp://10.96.0.9:80',
};

function config(env: Record<string, string>): Config {
  const r = loadConfig(env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

describe('lookupEnv', () => {
  test('the prefixed form wins; empty counts as unset; the source is named', () => {
    expect(lookupEnv({ PORT: '1', A2A_GUARD_PORT: '2' }, 'PORT')).toEqual({ value: '2', from: 'A2A_GUARD_PORT' });
    expect(lookupEnv({ PORT: '1', A2A_GUARD_PORT: '' }, 'PORT')).toEqual({ value: '1', from: 'PORT' });
    expect(lookupEnv({ PORT: '' }, 'PORT')).toBeUndefined();
    expect(ENV_PREFIX).toBe('A2A_GUARD_');
  });
});

describe('the proxy (loadConfig)', () => {
  test('every variable of the schema is read in its prefixed form', () => {
    const c = config({
      A2A_GUARD_UPSTREAM_URL: 'http://agent:9000',
      A2A_GUARD_GUARDIAN_URL: 'http://guardian:7070',
      A2A_GUARD_GUARDIAN_TOKEN: 's3cret',
      A2A_GUARD_PORT: '8081',
      A2A_GUARD_ADMIN_PORT: '9091',
      A2A_GUARD_ROLE: 'client',
      A2A_GUARD_FAIL_MODE: 'open',
      A2A_GUARD_INSPECT_RESPONSES: 'true',
      A2A_GUARD_OBSERVED_AGENT_NAME: 'Cooking assistant',
      A2A_GUARD_DRAIN_TIMEOUT_MS: '1234',
      A2A_GUARD_LOG_LEVEL: 'debug',
    });
    expect(c).toMatchObject({
      upstreamUrl: new URL('http://agent:9000'),
      guardianToken: 's3cret',
      port: 8081,
      adminPort: 9091,
      role: 'client',
      failMode: 'open',
      inspectResponses: true,
      observedAgent: { name: 'Cooking assistant' },
      drainTimeoutMs: 1234,
      logLevel: 'debug',
    });
    expect(c.guardianUrl?.href).toBe('http://guardian:7070/');
  });

  test('the prefixed form wins over the plain one, which still works alone', () => {
    expect(config({ UPSTREAM_URL: 'http://a:1', A2A_GUARD_UPSTREAM_URL: 'http://b:2' }).upstreamUrl.host).toBe('b:2');
    expect(config({ UPSTREAM_URL: 'http://a:1', ROLE: 'client' }).role).toBe('client');
  });

  test('Kubernetes service links cannot break a prefixed configuration', () => {
    const c = config({ ...SERVICE_LINKS, A2A_GUARD_UPSTREAM_URL: 'http://127.0.0.1:8000', A2A_GUARD_PORT: '8080', A2A_GUARD_ADMIN_PORT: '9090' });
    expect([c.port, c.adminPort]).toEqual([8080, 9090]);
  });

  test('an unprefixed service link gets an error line that names it and the way out', () => {
    const r = loadConfig({ UPSTREAM_URL: 'http://a:1', ADMIN_PORT: 'tcp://10.96.0.8:9090' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatch(
      /^ADMIN_PORT="tcp:\/\/10\.96\.0\.8:9090": must be a whole number \(this looks like a Kubernetes service link: set A2A_GUARD_ADMIN_PORT, or enableServiceLinks: false/,
    );
  });

  test('error lines name the variable that was read, and never show a token', () => {
    const r = loadConfig({
      A2A_GUARD_UPSTREAM_URL: 'http://a:1',
      A2A_GUARD_PORT: 'eighty',
      PORT: '80',
      A2A_GUARD_GUARDIAN_TOKEN: 'x',
      A2A_GUARD_GUARDIAN_TIMEOUT_MS: 'soon',
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.split('=')[0]).sort()).toEqual(['A2A_GUARD_GUARDIAN_TIMEOUT_MS', 'A2A_GUARD_PORT']);
    const missing = loadConfig({});
    expect(missing.ok ? [] : missing.problems).toEqual(['UPSTREAM_URL=(unset): is required']);
  });
});

describe('the reference guardian (readGuardianConfig)', () => {
  test('reads the prefixed forms, which win', () => {
    const { config: c, problems } = readGuardianConfig(
      {
        A2A_GUARD_GUARDIAN_PORT: '7071',
        GUARDIAN_PORT: '1',
        A2A_GUARD_GUARDIAN_HOST: '127.0.0.1',
        A2A_GUARD_POLICY_FILE: 'p.json',
        A2A_GUARD_LOG_LEVEL: 'warn',
        A2A_GUARD_GUARDIAN_TOKEN: 't',
      },
      '/srv',
    );
    expect(problems).toEqual([]);
    expect(c).toEqual({ port: 7071, host: '127.0.0.1', policyFile: '/srv/p.json', logLevel: 'warn', token: 't', policyWatch: true });
  });

  test('a Service named guardian no longer stops it: with the prefixed port the link is ignored', () => {
    expect(readGuardianConfig({ ...SERVICE_LINKS, A2A_GUARD_GUARDIAN_PORT: '7070', A2A_GUARD_GUARDIAN_HOST: '0.0.0.0' }, '/').problems).toEqual([]);
  });

  test('without it, the error line says what happened', () => {
    const { problems } = readGuardianConfig({ GUARDIAN_PORT: SERVICE_LINKS.GUARDIAN_PORT }, '/');
    expect(problems).toEqual([
      'GUARDIAN_PORT: expected an integer 0-65535, got "tcp://10.96.0.7:7070" (this looks like a Kubernetes service link: set A2A_GUARD_GUARDIAN_PORT, or enableServiceLinks: false in the pod)',
    ]);
  });

  test('GUARDIAN_TOKEN is optional', () => {
    expect(readGuardianConfig({}, '/').config.token).toBeUndefined();
  });
});

describe('the image health check', () => {
  test('asks the port the checked process listens on, by the same rule', () => {
    expect(healthUrl('proxy', {})).toBe('http://127.0.0.1:9090/healthz');
    expect(healthUrl('proxy', { ADMIN_PORT: '1', A2A_GUARD_ADMIN_PORT: '9191' })).toBe('http://127.0.0.1:9191/healthz');
    expect(healthUrl('proxy', { A2A_GUARD_ADMIN_HOST: '10.0.0.5' })).toBe('http://10.0.0.5:9090/healthz');
    expect(healthUrl('guardian', { A2A_GUARD_GUARDIAN_PORT: '7171', GUARDIAN_HOST: '::' })).toBe('http://127.0.0.1:7171/healthz');
    expect(healthUrl('guardian', { GUARDIAN_HOST: '::1' })).toBe('http://[::1]:7070/healthz');
  });
});
