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

describe('identity and TLS variables', () => {
  test('defaults: IDENTITY_POLICY=optional, nothing signed or verified, no TLS', () => {
    const c = ok(BASE);
    expect(c.identity).toEqual({
      policy: 'optional', signingKeyFile: undefined, signingKeyId: undefined, assertionTtlSeconds: 30, trustJwksFile: undefined, trustJwksUrl: undefined,
      audiences: [], replayCacheSize: 100_000, oidc: undefined, refreshMs: 30_000,
    });
    expect(c.tls.listener).toBeUndefined();
    expect(c.tls.guardian).toEqual({ caFile: undefined, certFile: undefined, keyFile: undefined, serverName: undefined });
    expect(c.guardianTokenFile).toBeUndefined();
  });

  test('every variable is read; audiences are normalised (origin + path, no trailing slash)', () => {
    const c = ok({
      ...BASE, IDENTITY_POLICY: 'required', ASSERTION_SIGNING_KEY_FILE: '/keys/sign.jwk', ASSERTION_SIGNING_KEY_ID: 'k-2', ASSERTION_TTL_SECONDS: '45',
      ASSERTION_TRUST_JWKS_FILE: '/keys/trust.jwks', ASSERTION_AUDIENCE: 'https://Baker-Guard:8443/, http://baker.internal/a2a/', ASSERTION_REPLAY_CACHE_SIZE: '5000',
      OIDC_ISSUER: 'https://idp.example/realms/x', OIDC_AUDIENCE: 'a2a-baker,other', OIDC_JWKS_URL: 'https://idp.example/jwks', OIDC_CLAIMS: 'id=sub,name=azp',
      CREDENTIALS_REFRESH_MS: '5000', TLS_CERT_FILE: '/tls/c.pem', TLS_KEY_FILE: '/tls/k.pem', TLS_CLIENT_CA_FILE: '/tls/ca.pem', TLS_CLIENT_CERT: 'optional',
      GUARDIAN_TOKEN_FILE: '/var/run/token', GUARDIAN_CA_FILE: '/g/ca', GUARDIAN_CERT_FILE: '/g/c', GUARDIAN_KEY_FILE: '/g/k', GUARDIAN_SERVER_NAME: 'guardian.internal',
      UPSTREAM_CA_FILE: '/u/ca', UPSTREAM_SERVER_NAME: 'agent.internal',
    });
    expect(c.identity).toMatchObject({
      policy: 'required', signingKeyFile: '/keys/sign.jwk', signingKeyId: 'k-2', assertionTtlSeconds: 45, trustJwksFile: '/keys/trust.jwks',
      audiences: ['https://baker-guard:8443', 'http://baker.internal/a2a'], replayCacheSize: 5000, refreshMs: 5000,
      oidc: { issuer: 'https://idp.example/realms/x', audiences: ['a2a-baker', 'other'], claims: { id: ['sub'], name: ['azp'], url: [], version: [] } },
    });
    expect(c.identity.oidc?.jwksUrl?.href).toBe('https://idp.example/jwks');
    expect(c.tls.listener).toEqual({ certFile: '/tls/c.pem', keyFile: '/tls/k.pem', clientCaFile: '/tls/ca.pem', clientCert: 'optional' });
    expect(c.tls.guardian).toEqual({ caFile: '/g/ca', certFile: '/g/c', keyFile: '/g/k', serverName: 'guardian.internal' });
    expect(c.tls.upstream).toEqual({ caFile: '/u/ca', certFile: undefined, keyFile: undefined, serverName: 'agent.internal' });
    expect(c.guardianTokenFile).toBe('/var/run/token');
  });

  test('the audience defaults to PUBLIC_URL', () => {
    expect(ok({ ...BASE, ASSERTION_TRUST_JWKS_FILE: '/t', PUBLIC_URL: 'https://guard.example/' }).identity.audiences).toEqual(['https://guard.example']);
  });

  test.each([
    [{ IDENTITY_POLICY: 'strict' }, 'IDENTITY_POLICY'],
    [{ ASSERTION_TTL_SECONDS: '61' }, 'ASSERTION_TTL_SECONDS'],
    [{ ASSERTION_TTL_SECONDS: '0' }, 'ASSERTION_TTL_SECONDS'],
    [{ TLS_CLIENT_CERT: 'maybe' }, 'TLS_CLIENT_CERT'],
    [{ TLS_CERT_FILE: '/c' }, 'TLS_KEY_FILE'],
    [{ GUARDIAN_KEY_FILE: '/k' }, 'GUARDIAN_CERT_FILE'],
    [{ UPSTREAM_CERT_FILE: '/c' }, 'UPSTREAM_KEY_FILE'],
    [{ TLS_CLIENT_CA_FILE: '/ca' }, 'TLS_CLIENT_CA_FILE'],
    [{ GUARDIAN_TOKEN: 't', GUARDIAN_TOKEN_FILE: '/t' }, 'GUARDIAN_TOKEN_FILE'],
    [{ ASSERTION_TRUST_JWKS_FILE: '/t' }, 'ASSERTION_AUDIENCE'],
    [{ ASSERTION_TRUST_JWKS_FILE: '/t', ASSERTION_TRUST_JWKS_URL: 'https://k/jwks', ASSERTION_AUDIENCE: 'https://me' }, 'ASSERTION_TRUST_JWKS_URL'],
    [{ ASSERTION_AUDIENCE: 'not a url' }, 'ASSERTION_AUDIENCE'],
    [{ OIDC_ISSUER: 'https://idp' }, 'OIDC_AUDIENCE'],
    [{ OIDC_AUDIENCE: 'x' }, 'OIDC_ISSUER'],
    [{ OIDC_CLAIMS: 'name=azp' }, 'OIDC_CLAIMS'],
    [{ IDENTITY_POLICY: 'required' }, 'IDENTITY_POLICY'],
    [{ ASSERTION_SIGNING_KEY_ID: 'has space' }, 'ASSERTION_SIGNING_KEY_ID'],
  ])('%p is refused, naming %s', (env, name) => {
    const p = problems({ ...BASE, ...env });
    expect(p).toHaveLength(1);
    expect(p[0]!.startsWith(`${name}=`)).toBe(true);
  });

  test('IDENTITY_POLICY=required is fine for ROLE=client (the caller is its own agent) and with any one source', () => {
    expect(ok({ ...BASE, IDENTITY_POLICY: 'required', ROLE: 'client' }).identity.policy).toBe('required');
    expect(ok({ ...BASE, IDENTITY_POLICY: 'required', OIDC_ISSUER: 'https://idp', OIDC_AUDIENCE: 'a' }).identity.policy).toBe('required');
    expect(ok({ ...BASE, IDENTITY_POLICY: 'required', TLS_CERT_FILE: '/c', TLS_KEY_FILE: '/k', TLS_CLIENT_CA_FILE: '/ca' }).identity.policy).toBe('required');
  });

  test('the token file path is masked like the token', () => {
    expect(problems({ ...BASE, GUARDIAN_TOKEN: 'tok-secret', GUARDIAN_TOKEN_FILE: '/x' }).join('\n')).not.toContain('tok-secret');
  });
});
