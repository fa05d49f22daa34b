import { configFrom, loadConfig, type Config } from '../../src/config';

const BASE = { UPSTREAM_URL: 'http://127.0.0.1:4000' };

function ok(env: Record<string, string | undefined>): Config {
  const r = loadConfig(env);
  if (!r.ok) throw new Error(`expected a valid config, got:\n${r.problems.join('\n')}`);
  return r.config;
}

function problems(env: Record<string, string | undefined>): string[] {
  const r = loadConfig(env);
  if (r.ok) throw new Error('expected configuration problems, got a valid config');
  return r.problems;
}

describe('loadConfig defaults', () => {
  test('only UPSTREAM_URL set gives the documented defaults (design section 8)', () => {
    const c = ok(BASE);
    expect(c.port).toBe(8080);
    expect(c.host).toBe('0.0.0.0');
    expect(c.upstreamUrl).toBeInstanceOf(URL);
    expect(c.upstreamUrl.href).toBe('http://127.0.0.1:4000/');
    expect(c.guardianUrl).toBeUndefined();
    expect(c.guardianToken).toBeUndefined();
    expect(c.guardianTimeoutMs).toBe(5000);
    expect(c.role).toBe('server');
    expect(c.failMode).toBe('closed');
    expect(c.inspectResponses).toBe(false);
    expect(c.reasoningHeader).toBe('x-aos-reasoning');
    expect(c.observedAgent).toEqual({});
    expect(c.publicUrl).toBeUndefined();
    expect(c.maxBodyBytes).toBe(10485760);
    expect(c.exposeGuardianReasoning).toBe(false);
    expect(c.adminPort).toBe(9090);
    expect(c.logLevel).toBe('info');
    expect(c.cardSignatures).toBe('strip');
    expect(c.shadowMode).toBe(false);
  });

  test('UPSTREAM_URL is required', () => {
    const p = problems({});
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^UPSTREAM_URL/);
    expect(p[0]).toContain('is required');
  });

  test('configFrom throws with every problem line', () => {
    expect(() => configFrom({ PORT: 'x' })).toThrow(/UPSTREAM_URL[\s\S]*PORT|PORT[\s\S]*UPSTREAM_URL/);
    expect(configFrom(BASE).port).toBe(8080);
  });
});

describe('loadConfig values', () => {
  test('every variable is read', () => {
    const c = ok({
      PORT: '1234',
      HOST: '127.0.0.1',
      UPSTREAM_URL: 'https://agent.example:8443/base',
      GUARDIAN_URL: 'http://guardian:7070/aos',
      GUARDIAN_TOKEN: 's3cret',
      GUARDIAN_TIMEOUT_MS: '250',
      ROLE: 'both',
      FAIL_MODE: 'open',
      INSPECT_RESPONSES: 'true',
      REASONING_HEADER: 'X-My-Reasoning',
      OBSERVED_AGENT_NAME: 'n',
      OBSERVED_AGENT_ID: 'i',
      OBSERVED_AGENT_URL: 'http://a',
      OBSERVED_AGENT_VERSION: '1',
      OBSERVED_AGENT_DESCRIPTION: 'd',
      OBSERVED_AGENT_INSTRUCTIONS: 'ins',
      OBSERVED_AGENT_PROVIDER_NAME: 'pn',
      OBSERVED_AGENT_PROVIDER_URL: 'http://p',
      PUBLIC_URL: 'https://proxy.example/guard',
      MAX_BODY_BYTES: '2048',
      EXPOSE_GUARDIAN_REASONING: 'yes',
      ADMIN_PORT: '0',
      LOG_LEVEL: 'debug',
    });
    expect(c.port).toBe(1234);
    expect(c.host).toBe('127.0.0.1');
    expect(c.upstreamUrl.href).toBe('https://agent.example:8443/base');
    expect(c.guardianUrl?.href).toBe('http://guardian:7070/aos');
    expect(c.guardianToken).toBe('s3cret');
    expect(c.guardianTimeoutMs).toBe(250);
    expect(c.role).toBe('both');
    expect(c.failMode).toBe('open');
    expect(c.inspectResponses).toBe(true);
    expect(c.reasoningHeader).toBe('x-my-reasoning'); // lower-cased: Node lower-cases incoming header names
    expect(c.observedAgent).toEqual({
      name: 'n', id: 'i', url: 'http://a', version: '1', description: 'd', instructions: 'ins', providerName: 'pn', providerUrl: 'http://p',
    });
    expect(c.publicUrl?.href).toBe('https://proxy.example/guard');
    expect(c.maxBodyBytes).toBe(2048);
    expect(c.exposeGuardianReasoning).toBe(true);
    expect(c.adminPort).toBe(0);
    expect(c.logLevel).toBe('debug');
  });

  test.each([
    ['true', true], ['1', true], ['yes', true], ['false', false], ['0', false], ['no', false],
  ])('boolean %p -> %p', (raw, want) => {
    expect(ok({ ...BASE, INSPECT_RESPONSES: raw }).inspectResponses).toBe(want);
    expect(ok({ ...BASE, EXPOSE_GUARDIAN_REASONING: raw }).exposeGuardianReasoning).toBe(want);
  });

  test('empty strings count as unset (defaults apply, no problem lines)', () => {
    const c = ok({
      ...BASE, PORT: '', HOST: '', GUARDIAN_URL: '', GUARDIAN_TOKEN: '', ROLE: '', FAIL_MODE: '', INSPECT_RESPONSES: '',
      REASONING_HEADER: '', OBSERVED_AGENT_NAME: '', PUBLIC_URL: '', MAX_BODY_BYTES: '', LOG_LEVEL: '', ADMIN_PORT: '',
    });
    expect(c.port).toBe(8080);
    expect(c.host).toBe('0.0.0.0');
    expect(c.guardianUrl).toBeUndefined();
    expect(c.guardianToken).toBeUndefined();
    expect(c.role).toBe('server');
    expect(c.failMode).toBe('closed');
    expect(c.reasoningHeader).toBe('x-aos-reasoning');
    expect(c.observedAgent).toEqual({});
    expect(c.publicUrl).toBeUndefined();
    expect(c.maxBodyBytes).toBe(10485760);
    expect(c.adminPort).toBe(9090);
    expect(c.logLevel).toBe('info');
  });

  test('an empty UPSTREAM_URL is "required", not "invalid URL"', () => {
    const p = problems({ UPSTREAM_URL: '' });
    expect(p).toEqual(['UPSTREAM_URL=(unset): is required']);
  });

  test('unrelated environment variables are ignored', () => {
    expect(ok({ ...BASE, PATH: '/usr/bin', HOME: '/root', RANDOM_THING: '!!' }).port).toBe(8080);
  });
});

describe('loadConfig validation: one problem line per bad variable, naming it', () => {
  const bad: Array<[string, string]> = [
    ['PORT', 'abc'],
    ['PORT', '-1'],
    ['PORT', '65536'],
    ['PORT', '80.5'],
    ['UPSTREAM_URL', 'ftp://agent.example/'],
    ['GUARDIAN_TIMEOUT_MS', '0'],
    ['GUARDIAN_TIMEOUT_MS', '5s'],
    ['ROLE', 'proxy'],
    ['ROLE', 'Server'],
    ['FAIL_MODE', 'half'],
    ['INSPECT_RESPONSES', 'maybe'],
    ['EXPOSE_GUARDIAN_REASONING', 'TRUE'],
    ['REASONING_HEADER', 'bad header'],
    ['REASONING_HEADER', 'x:y'],
    ['MAX_BODY_BYTES', '0'],
    ['MAX_BODY_BYTES', '1e6'],
    ['ADMIN_PORT', '99999'],
    ['LOG_LEVEL', 'verbose'],
    ['CARD_SIGNATURES', 'drop'],
    ['GUARDIAN_URL', 'ws://guardian:7070'],
    ['PUBLIC_URL', 'file:///etc/passwd'],
    ['OBSERVED_AGENT_CARD_URL', 'ftp://client/card.json'],
    ['BODY_TIMEOUT_MS', '0'],
    ['CARD_TTL_MS', '-5'],
    ['UNKNOWN_METHODS', 'allow'],
    ['SHADOW_MODE', 'on'],
    ['ALLOW_WEBSOCKETS', 'y'],
    ['DRAIN_TIMEOUT_MS', '600001'],
  ];

  test.each(bad)('%s=%p', (name, value) => {
    const env: Record<string, string> = { ...BASE, [name]: value };
    const p = problems(env);
    expect(p).toHaveLength(1);
    expect(p[0]!.startsWith(`${name}=`)).toBe(true);
    expect(p[0]).toContain(JSON.stringify(value));
  });

  test('several bad variables: one line each, each naming its variable', () => {
    const p = problems({ ...BASE, PORT: 'x', ROLE: 'y', FAIL_MODE: 'z', LOG_LEVEL: 'w' });
    expect(p).toHaveLength(4);
    expect(p.map((l) => l.split('=')[0]).sort()).toEqual(['FAIL_MODE', 'LOG_LEVEL', 'PORT', 'ROLE']);
  });

  test('range messages name the bound', () => {
    expect(problems({ ...BASE, PORT: '70000' })[0]).toContain('65535');
    expect(problems({ ...BASE, GUARDIAN_TIMEOUT_MS: '0' })[0]).toContain('at least 1');
  });

  // Regression: a value that is not a URL at all used to fail both a `.url()` check and a `.refine()` check,
  // so one bad variable yielded two problem lines.
  test.each([
    ['UPSTREAM_URL', 'not a url'],
    ['GUARDIAN_URL', 'guardian'],
    ['PUBLIC_URL', 'proxy.example'],
  ])('non-URL %s=%p gives exactly one problem line', (name, value) => {
    const p = problems({ ...BASE, [name]: value });
    expect(p).toEqual([`${name}=${JSON.stringify(value)}: must be an absolute http(s) URL`]);
  });
});

describe('GUARDIAN_TOKEN never appears in problem lines', () => {
  const token = 'tok-VERY-secret-1234';

  test('with other problems present', () => {
    const p = problems({ PORT: 'x', GUARDIAN_TOKEN: token, GUARDIAN_URL: 'nope', ROLE: token });
    expect(p.length).toBeGreaterThanOrEqual(3);
    // ROLE deliberately carries the same string: the point is the GUARDIAN_TOKEN line, so check that one.
    for (const line of p.filter((l) => !l.startsWith('ROLE='))) expect(line).not.toContain(token);
  });

  test('with only the token set and UPSTREAM_URL missing', () => {
    const p = problems({ GUARDIAN_TOKEN: token });
    expect(p.join('\n')).not.toContain(token);
  });

  test('a token that happens to be a number-looking string is still never shown', () => {
    const p = problems({ PORT: 'x', GUARDIAN_TOKEN: '12345' });
    expect(p.join('\n')).not.toContain('12345');
  });
});
