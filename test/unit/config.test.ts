import { configFrom, loadConfig, misspelledVariables, type Config } from '../../src/config/config';

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
    // The positive model: nothing but A2A and the card is forwarded unless an operator lists it.
    expect(c.passthroughPaths).toEqual([]);
    expect(c.restBasePaths).toBeUndefined();
    expect(c.nonA2A).toBe('refuse');
    expect(c.maxInflightBodyBytes).toBe(256 * 1024 * 1024);
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
      name: 'n',
      id: 'i',
      url: 'http://a',
      version: '1',
      description: 'd',
      instructions: 'ins',
      providerName: 'pn',
      providerUrl: 'http://p',
    });
    expect(c.publicUrl?.href).toBe('https://proxy.example/guard');
    expect(c.maxBodyBytes).toBe(2048);
    expect(c.exposeGuardianReasoning).toBe(true);
    expect(c.adminPort).toBe(0);
    expect(c.logLevel).toBe('debug');
  });

  test.each([
    ['true', true],
    ['1', true],
    ['yes', true],
    ['false', false],
    ['0', false],
    ['no', false],
  ])('boolean %p -> %p', (raw, want) => {
    expect(ok({ ...BASE, INSPECT_RESPONSES: raw }).inspectResponses).toBe(want);
    expect(ok({ ...BASE, EXPOSE_GUARDIAN_REASONING: raw }).exposeGuardianReasoning).toBe(want);
  });

  test('empty strings count as unset (defaults apply, no problem lines)', () => {
    const c = ok({
      ...BASE,
      PORT: '',
      HOST: '',
      GUARDIAN_URL: '',
      GUARDIAN_TOKEN: '',
      ROLE: '',
      FAIL_MODE: '',
      INSPECT_RESPONSES: '',
      REASONING_HEADER: '',
      OBSERVED_AGENT_NAME: '',
      PUBLIC_URL: '',
      MAX_BODY_BYTES: '',
      LOG_LEVEL: '',
      ADMIN_PORT: '',
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
    ['NON_A2A', 'allow'],
    ['NON_A2A', 'Forward'],
    ['PASSTHROUGH_PATHS', 'admin'],
    ['PASSTHROUGH_PATHS', '/a//b'],
    ['PASSTHROUGH_PATHS', '/health,/x/../a2a'],
    ['PASSTHROUGH_PATHS', '/a%2Fb'],
    ['REST_BASE_PATHS', 'a2a/rest'],
    ['REST_BASE_PATHS', '/a2a;v=1/rest'],
    ['MAX_INFLIGHT_BODY_BYTES', '0'],
    ['MAX_INFLIGHT_BODY_BYTES', '1GiB'],
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

describe('PASSTHROUGH_PATHS, REST_BASE_PATHS, NON_A2A, MAX_INFLIGHT_BODY_BYTES', () => {
  test('paths are read as decoded segments; blanks, spaces and a trailing slash do not matter', () => {
    const c = ok({ ...BASE, PASSTHROUGH_PATHS: ' /admin, /static/v2/ ,,/caf%C3%A9', REST_BASE_PATHS: '/a2a/rest/,/tenant-api' });
    expect(c.passthroughPaths).toEqual([['admin'], ['static', 'v2'], ['café']]);
    expect(c.restBasePaths).toEqual([['a2a', 'rest'], ['tenant-api']]);
  });

  test('"/" lists the root (every non-A2A path), as the operator wrote it', () => {
    expect(ok({ ...BASE, PASSTHROUGH_PATHS: '/' }).passthroughPaths).toEqual([[]]);
  });

  test('an empty REST_BASE_PATHS is unset (the card decides)', () => {
    expect(ok({ ...BASE, REST_BASE_PATHS: '' }).restBasePaths).toBeUndefined();
    expect(ok({ ...BASE, REST_BASE_PATHS: ',' }).restBasePaths).toEqual([]);
  });

  test('a bad entry is named in its problem line', () => {
    expect(problems({ ...BASE, PASSTHROUGH_PATHS: '/ok,admin' })).toEqual(['PASSTHROUGH_PATHS="/ok,admin": "admin" is not an absolute plain path']);
  });

  test('NON_A2A=forward and a MAX_INFLIGHT_BODY_BYTES are read', () => {
    const c = ok({ ...BASE, NON_A2A: 'forward', MAX_INFLIGHT_BODY_BYTES: '1048576' });
    expect(c.nonA2A).toBe('forward');
    expect(c.maxInflightBodyBytes).toBe(1048576);
  });

  test('the removed UNKNOWN_METHODS is no longer read: unknown methods are refused unless NON_A2A=forward', () => {
    expect(ok({ ...BASE, UNKNOWN_METHODS: 'forward' }).nonA2A).toBe('refuse');
  });
});

describe('misspelled variables stop the start (GAURDIAN_URL left the demo policy deciding)', () => {
  test.each([
    ['GAURDIAN_URL', 'GUARDIAN_URL'],
    ['GUARDIAN_URI', 'GUARDIAN_URL'],
    ['GUARDAIN_URL', 'GUARDIAN_URL'],
    ['GUARDIAN-URL', 'GUARDIAN_URL'],
    ['guardian_url', 'GUARDIAN_URL'],
    ['GUARDIANURL', 'GUARDIAN_URL'],
    ['GUARDIAN_TOKN', 'GUARDIAN_TOKEN'],
    ['FAIL_MOED', 'FAIL_MODE'],
    ['FAILMODE', 'FAIL_MODE'],
    ['UPSTREAM_UR', 'UPSTREAM_URL'],
    ['PASTHROUGH_PATHS', 'PASSTHROUGH_PATHS'],
    ['PASSTHROUGH_PATH', 'PASSTHROUGH_PATHS'],
    ['REST_BASE_PATH', 'REST_BASE_PATHS'],
    ['NON_A2', 'NON_A2A'],
    ['INSPECT_RESPONSE', 'INSPECT_RESPONSES'],
    ['PORTS', 'PORT'],
    ['port', 'PORT'],
  ])('%s -> refused with "did you mean %s?"', (typo, want) => {
    const p = problems({ ...BASE, GUARDIAN_URL: 'http://guardian:7070', [typo]: 'http://guardian.example/aos' });
    expect(p).toEqual([`${typo}: unknown variable; did you mean ${want}?`]);
  });

  test('the value of a misspelled variable is never shown (it may be a token)', () => {
    const p = problems({ ...BASE, GUARDIAN_TOKN: 'tok-VERY-secret-1234' });
    expect(p.join('\n')).not.toContain('tok-VERY-secret');
  });

  test('misspellings are reported next to the other problems', () => {
    const p = problems({ UPSTREAM_URL: 'nope', GAURDIAN_URL: 'http://g' });
    expect(p).toHaveLength(2);
    expect(p).toEqual(expect.arrayContaining([expect.stringMatching(/^UPSTREAM_URL=/), 'GAURDIAN_URL: unknown variable; did you mean GUARDIAN_URL?']));
  });

  const withoutKey = (o: Record<string, string>, k: string): Record<string, string> => Object.fromEntries(Object.entries(o).filter(([n]) => n !== k));

  /** A Kubernetes service link set, as the kubelet injects it for every service of the namespace. */
  function serviceLinks(name: string, port: number): Record<string, string> {
    const n = name.toUpperCase().replace(/-/g, '_');
    const addr = '10.0.0.7';
    return {
      [`${n}_SERVICE_HOST`]: addr,
      [`${n}_SERVICE_PORT`]: String(port),
      [`${n}_SERVICE_PORT_HTTP`]: String(port),
      [`${n}_PORT`]: `tcp://${addr}:${port}`,
      [`${n}_PORT_${port}_TCP`]: `tcp://${addr}:${port}`,
      [`${n}_PORT_${port}_TCP_PROTO`]: 'tcp',
      [`${n}_PORT_${port}_TCP_PORT`]: String(port),
      [`${n}_PORT_${port}_TCP_ADDR`]: addr,
    };
  }

  const TYPICAL: Record<string, string> = {
    HOME: '/root',
    PATH: '/usr/local/bin:/usr/bin',
    HOSTNAME: 'a2a-guard-7d9f-x2',
    PWD: '/app',
    OLDPWD: '/',
    USER: 'node',
    LOGNAME: 'node',
    SHELL: '/bin/sh',
    SHLVL: '1',
    TERM: 'xterm',
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    _: '/usr/local/bin/node',
    TMPDIR: '/tmp',
    EDITOR: 'vi',
    HOST_IP: '10.1.2.3',
    NODE_ENV: 'production',
    NODE_OPTIONS: '--max-old-space-size=512',
    NODE_VERSION: '20.20.2',
    YARN_VERSION: '1.22.22',
    CI: 'true',
    INIT_CWD: '/app',
    npm_config_cache: '/root/.npm',
    npm_lifecycle_event: 'start',
    npm_lifecycle_script: 'node dist/src/main.js',
    npm_package_name: 'a2a-guard',
    npm_package_version: '0.1.0',
    npm_config_loglevel: 'warn',
    npm_node_execpath: '/usr/local/bin/node',
    npm_command: 'run-script',
    npm_execpath: '/usr/local/lib/node_modules/npm/bin/npm-cli.js',
    npm_config_user_agent: 'npm/10.8.2 node/v20.20.2 linux x64',
    npm_config_prefix: '/usr/local',
    GITHUB_ACTIONS: 'true',
    RUNNER_OS: 'Linux',
    RUNNER_TEMP: '/tmp',
    GITHUB_WORKSPACE: '/w',
    ...serviceLinks('kubernetes', 443),
    ...serviceLinks('guardian', 7070),
    ...serviceLinks('upstream', 8080),
    ...serviceLinks('agent', 8080),
    ...withoutKey(serviceLinks('a2a-guard', 8080), 'A2A_GUARD_PORT'),
    ...serviceLinks('redis', 6379),
    ...serviceLinks('otel-collector', 4318),
    ...serviceLinks('proxy', 8080),
    ...serviceLinks('host', 80),
    ...serviceLinks('role', 80),
    ...serviceLinks('postgres', 5432),
  };

  test('an ordinary container environment (shell, npm_*, CI, Kubernetes service links) is not flagged', () => {
    expect(ok({ ...TYPICAL, ...BASE }).port).toBe(8080);
  });

  // A Service named a2a-guard injects A2A_GUARD_PORT=tcp://...: read as PORT, it stops the start, named (never ignored).
  test('a Service named a2a-guard injects A2A_GUARD_PORT=tcp://...: ignored as a service link, PORT (or its default) decides', () => {
    expect(ok({ ...BASE, ...serviceLinks('a2a-guard', 8080) }).port).toBe(8080);
    expect(ok({ ...BASE, PORT: '9999', ...serviceLinks('a2a-guard', 8080) }).port).toBe(9999);
    expect(ok({ ...BASE, A2A_GUARD_PORT: '7777', PORT: '9999' }).port).toBe(7777);
  });

  test.each(['HOME', 'PATH', 'HOSTNAME', 'PWD', 'USER', 'npm_config_cache', 'npm_package_name', 'KUBERNETES_SERVICE_HOST', 'GUARDIAN_PORT', 'UPSTREAM_PORT'])(
    '%s alone is not flagged',
    (name) => {
      expect(ok({ ...BASE, [name]: 'x' }).port).toBe(8080);
    },
  );

  test('unset (undefined) entries are ignored', () => {
    expect(ok({ ...BASE, GAURDIAN_URL: undefined }).port).toBe(8080);
  });

  test('misspelledVariables: one edit for names up to 6 characters (HOME is not HOST), two above; transpositions count once', () => {
    const known = ['HOST', 'PORT', 'GUARDIAN_URL'];
    expect(
      misspelledVariables({ HOME: '/root', HOSR: 'x', POTR: 'x', PORTAL: 'x', GUARDIN_UR: 'x', GUARDIAN_URLS: 'x', GARDIAN_ULR: 'x', GUARD_URL: 'x' }, known),
    ).toEqual([
      'HOSR: unknown variable; did you mean HOST?',
      'POTR: unknown variable; did you mean PORT?',
      'GUARDIN_UR: unknown variable; did you mean GUARDIAN_URL?',
      'GUARDIAN_URLS: unknown variable; did you mean GUARDIAN_URL?',
      'GARDIAN_ULR: unknown variable; did you mean GUARDIAN_URL?',
    ]);
    expect(misspelledVariables({ HOST: 'x', GUARDIAN_URL: 'y' }, known)).toEqual([]);
  });

  // SSL_CERT_FILE (set by OpenSSL-based images and most CI runners) once stopped the proxy: "did you mean TLS_CERT_FILE?".
  const COMMON = `PATH HOME PWD OLDPWD SHELL TERM USER LOGNAME LANG LANGUAGE LC_ALL LC_CTYPE TZ TMPDIR TEMP TMP HOSTNAME HOSTTYPE OSTYPE SHLVL EDITOR PAGER
    NODE_ENV NODE_OPTIONS NODE_PATH NODE_EXTRA_CA_CERTS NODE_TLS_REJECT_UNAUTHORIZED NODE_DEBUG NODE_NO_WARNINGS UV_THREADPOOL_SIZE INIT_CWD
    SSL_CERT_FILE SSL_CERT_DIR SSL_KEY_FILE SSLKEYLOGFILE OPENSSL_CONF CURL_CA_BUNDLE REQUESTS_CA_BUNDLE GIT_SSL_CAINFO NIX_SSL_CERT_FILE PIP_CERT
    AWS_CA_BUNDLE GRPC_DEFAULT_SSL_ROOTS_FILE_PATH GRPC_TRACE GRPC_VERBOSITY HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY http_proxy https_proxy no_proxy
    DEBUG CI GITHUB_ACTIONS GITHUB_TOKEN RUNNER_OS RUNNER_TEMP KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT KUBERNETES_PORT KUBERNETES_PORT_443_TCP
    KUBERNETES_PORT_443_TCP_ADDR KUBERNETES_PORT_443_TCP_PORT KUBERNETES_PORT_443_TCP_PROTO POD_NAME POD_NAMESPACE POD_IP NODE_NAME HOST_IP
    GUARDIAN_SERVICE_HOST GUARDIAN_SERVICE_PORT GUARDIAN_PORT_7070_TCP GUARDIAN_PORT_7070_TCP_ADDR GUARDIAN_PORT_7070_TCP_PORT GUARDIAN_PORT_7070_TCP_PROTO
    OTEL_SERVICE_NAME OTEL_EXPORTER_OTLP_HEADERS OTEL_EXPORTER_OTLP_TIMEOUT OTEL_EXPORTER_OTLP_COMPRESSION OTEL_EXPORTER_OTLP_CERTIFICATE
    OTEL_METRICS_EXPORTER OTEL_LOGS_EXPORTER OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_PROPAGATORS OTEL_LOG_LEVEL OTEL_BSP_SCHEDULE_DELAY
    LOG_FORMAT LOGLEVEL LOG_FILE REDIS_URL REDIS_HOST REDIS_PORT DATABASE_URL AWS_REGION AWS_ACCESS_KEY_ID GOOGLE_APPLICATION_CREDENTIALS`.split(/\s+/);

  test("well-known variables of other software, and this machine's own environment, are not typos", () => {
    // Values are 'x': a variable of ours in this environment may then be invalid, but never "unknown".
    const env = Object.fromEntries([...COMMON, ...Object.keys(process.env)].map((n) => [n, 'x']));
    const result = loadConfig({ ...env, ...BASE });
    expect(result.ok ? [] : result.problems.filter((p) => p.includes('unknown variable'))).toEqual([]);
    // With our prefix they are ours, and a typo again.
    expect(problems({ ...BASE, A2A_GUARD_SSL_CERT_FILE: '/x' })).toEqual(['A2A_GUARD_SSL_CERT_FILE: unknown variable; did you mean TLS_CERT_FILE?']);
  });
});

describe('identity and TLS variables', () => {
  test('defaults: IDENTITY_POLICY=optional, nothing signed or verified, no TLS', () => {
    const c = ok(BASE);
    expect(c.identity).toEqual({
      policy: 'optional',
      signingKeyFile: undefined,
      signingKeyId: undefined,
      assertionTtlSeconds: 30,
      trustJwksFile: undefined,
      trustJwksUrl: undefined,
      audiences: [],
      replayCacheSize: 100_000,
      oidc: undefined,
      refreshMs: 30_000,
    });
    expect(c.tls.listener).toBeUndefined();
    expect(c.tls.guardian).toEqual({ caFile: undefined, certFile: undefined, keyFile: undefined, serverName: undefined });
    expect(c.guardianTokenFile).toBeUndefined();
  });

  test('every variable is read; audiences are normalised (origin + path, no trailing slash)', () => {
    const c = ok({
      ...BASE,
      IDENTITY_POLICY: 'required',
      ASSERTION_SIGNING_KEY_FILE: '/keys/sign.jwk',
      ASSERTION_SIGNING_KEY_ID: 'k-2',
      ASSERTION_TTL_SECONDS: '45',
      ASSERTION_TRUST_JWKS_FILE: '/keys/trust.jwks',
      ASSERTION_AUDIENCE: 'https://Baker-Guard:8443/, http://baker.internal/a2a/',
      ASSERTION_REPLAY_CACHE_SIZE: '5000',
      OIDC_ISSUER: 'https://idp.example/realms/x',
      OIDC_AUDIENCE: 'a2a-baker,other',
      OIDC_JWKS_URL: 'https://idp.example/jwks',
      OIDC_CLAIMS: 'id=sub,name=azp',
      CREDENTIALS_REFRESH_MS: '5000',
      TLS_CERT_FILE: '/tls/c.pem',
      TLS_KEY_FILE: '/tls/k.pem',
      TLS_CLIENT_CA_FILE: '/tls/ca.pem',
      TLS_CLIENT_CERT: 'optional',
      GUARDIAN_TOKEN_FILE: '/var/run/token',
      GUARDIAN_CA_FILE: '/g/ca',
      GUARDIAN_CERT_FILE: '/g/c',
      GUARDIAN_KEY_FILE: '/g/k',
      GUARDIAN_SERVER_NAME: 'guardian.internal',
      UPSTREAM_CA_FILE: '/u/ca',
      UPSTREAM_SERVER_NAME: 'agent.internal',
    });
    expect(c.identity).toMatchObject({
      policy: 'required',
      signingKeyFile: '/keys/sign.jwk',
      signingKeyId: 'k-2',
      assertionTtlSeconds: 45,
      trustJwksFile: '/keys/trust.jwks',
      audiences: ['https://baker-guard:8443', 'http://baker.internal/a2a'],
      replayCacheSize: 5000,
      refreshMs: 5000,
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

describe('ALLOW_WEBSOCKETS and UPGRADE_PATHS', () => {
  test('ALLOW_WEBSOCKETS=true alone is a start error naming UPGRADE_PATHS', () => {
    expect(problems({ ...BASE, ALLOW_WEBSOCKETS: 'true' })).toEqual([expect.stringMatching(/^UPGRADE_PATHS.*required with ALLOW_WEBSOCKETS=true/)]);
  });
  test('UPGRADE_PATHS without ALLOW_WEBSOCKETS=true is a start error', () => {
    expect(problems({ ...BASE, UPGRADE_PATHS: '/socket' })).toEqual([expect.stringMatching(/^ALLOW_WEBSOCKETS.*must be true/)]);
  });
  test('a prefix that reads as an A2A route is refused at start', () => {
    expect(problems({ ...BASE, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/ws,/tasks' })).toEqual([expect.stringContaining('"/tasks" reads as an A2A route')]);
  });
  test('both set: the prefixes are read as decoded segments', () => {
    expect(ok({ ...BASE, ALLOW_WEBSOCKETS: 'true', UPGRADE_PATHS: '/ws, /live/feed' }).upgradePaths).toEqual([['ws'], ['live', 'feed']]);
  });
});

test('INSPECT_CARDS follows INSPECT_RESPONSES unless set', () => {
  const base = { UPSTREAM_URL: 'http://127.0.0.1:9999', GUARDIAN_URL: 'http://127.0.0.1:9998' };
  expect(configFrom(base).inspectCards).toBe(false);
  expect(configFrom({ ...base, INSPECT_RESPONSES: 'true' }).inspectCards).toBe(true);
  expect(configFrom({ ...base, INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' }).inspectCards).toBe(false);
  expect(configFrom({ ...base, INSPECT_CARDS: 'yes' }).inspectCards).toBe(true);
});
