/**
 * docker-compose.yml, Dockerfile and config/*.env checked without a container engine:
 * the compose file parses; every proxy service's environment passes the proxy's own parser;
 * every URL between services names a service and a port that service listens on; every service
 * builds from the Dockerfile (the target that carries its program) and runs with init: true.
 * The Dockerfile: Node 24 base, numeric user, production code and dependencies only in the
 * production targets, OCI labels, health checks.
 *
 * The YAML is read with a small parser for the subset compose files use (block mappings, block
 * sequences of scalars, flow sequences of scalars, quoted and plain scalars, comments); it
 * refuses anything else, so the compose file stays in that subset.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { readGuardianConfig } from '../../src/guardian/main';
import { loadPolicy } from '../../src/guardian/policy';
import { parseEnvFile } from '../../src/demo/envfile';
import { parseSigningKey, parseTrustedJwks } from '../../src/identity/keys';

const ROOT = join(__dirname, '..', '..');

// ------------------------------------------------------------------------------------------
// A YAML subset parser
// ------------------------------------------------------------------------------------------

interface Line {
  readonly no: number;
  readonly indent: number;
  readonly text: string;
}

function stripComment(raw: string): string {
  let quote: string | undefined;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '#' && (i === 0 || /\s/.test(raw[i - 1] ?? ''))) {
      return raw.slice(0, i);
    }
  }
  return raw;
}

function splitFlow(body: string, no: number): string[] {
  const items: string[] = [];
  let cur = '';
  let quote: string | undefined;
  for (const ch of body) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
      cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      cur += ch;
    } else if (ch === '[' || ch === '{') {
      throw new Error(`line ${no}: nested flow collections are not supported`);
    } else if (ch === ',') {
      items.push(cur.trim());
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur.trim() !== '') items.push(cur.trim());
  return items;
}

function scalar(text: string, no: number): unknown {
  const t = text.trim();
  if (t.startsWith('"')) {
    if (!t.endsWith('"') || t.length < 2) throw new Error(`line ${no}: unterminated string`);
    return JSON.parse(t) as string;
  }
  if (t.startsWith("'")) {
    if (!t.endsWith("'") || t.length < 2) throw new Error(`line ${no}: unterminated string`);
    return t.slice(1, -1).replace(/''/g, "'");
  }
  if (t.startsWith('[')) {
    if (!t.endsWith(']')) throw new Error(`line ${no}: unterminated flow sequence`);
    return splitFlow(t.slice(1, -1), no).map((x) => scalar(x, no));
  }
  if (/^[{&*!|>%@`]/.test(t)) throw new Error(`line ${no}: unsupported YAML: ${t}`);
  if (t === 'true' || t === 'false') return t === 'true';
  if (t === 'null' || t === '~') return null;
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}

function parseYamlSubset(source: string): unknown {
  const lines: Line[] = [];
  source.split(/\r?\n/).forEach((raw, i) => {
    if (/^\s*\t/.test(raw)) throw new Error(`line ${i + 1}: tab indentation`);
    const text = stripComment(raw).replace(/\s+$/, '');
    if (text.trim() === '' || text.trim() === '---') return;
    lines.push({ no: i + 1, indent: text.length - text.trimStart().length, text: text.trim() });
  });
  let i = 0;
  const isItem = (t: string): boolean => t === '-' || t.startsWith('- ');
  const keyValue = /^("[^"]*"|'[^']*'|[^\s"'#][^:]*?):(?:\s+(.*))?$/;

  function block(): unknown {
    const first = lines[i];
    if (first === undefined) return null;
    return isItem(first.text) ? sequence(first.indent) : mapping(first.indent);
  }

  function mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (i < lines.length) {
      const l = lines[i] as Line;
      if (l.indent < indent) break;
      if (l.indent > indent) throw new Error(`line ${l.no}: unexpected indentation`);
      if (isItem(l.text)) break;
      const m = keyValue.exec(l.text);
      if (m === null) throw new Error(`line ${l.no}: expected "key: value", got ${l.text}`);
      const key = String(scalar(m[1] as string, l.no));
      if (key in out) throw new Error(`line ${l.no}: duplicate key ${key}`);
      i++;
      const value = m[2];
      if (value === undefined || value === '') {
        const next = lines[i];
        if (next !== undefined && (next.indent > indent || (next.indent === indent && isItem(next.text)))) out[key] = block();
        else out[key] = null;
      } else {
        out[key] = scalar(value, l.no);
      }
    }
    return out;
  }

  function sequence(indent: number): unknown[] {
    const out: unknown[] = [];
    while (i < lines.length) {
      const l = lines[i] as Line;
      if (l.indent !== indent || !isItem(l.text)) break;
      const rest = l.text.slice(1).trim();
      if (rest === '' || keyValue.test(rest)) throw new Error(`line ${l.no}: only scalar sequence items are supported`);
      out.push(scalar(rest, l.no));
      i++;
    }
    const next = lines[i];
    if (next !== undefined && next.indent > indent) throw new Error(`line ${next.no}: unexpected indentation`);
    return out;
  }

  const doc = block();
  if (i < lines.length) throw new Error(`line ${lines[i]?.no}: unexpected content`);
  return doc;
}

// ------------------------------------------------------------------------------------------
// The compose file
// ------------------------------------------------------------------------------------------

type Service = {
  build?: unknown;
  image?: unknown;
  init?: unknown;
  command?: unknown;
  environment?: unknown;
  env_file?: unknown;
  expose?: unknown;
  ports?: unknown;
  depends_on?: unknown;
};

const composeText = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = parseYamlSubset(composeText) as { services: Record<string, Service> };
const services = compose.services;
const names = Object.keys(services ?? {});

/** The container's environment: env_file(s) first, then `environment` (which wins), as compose does. */
function envOf(svc: Service): Record<string, string> {
  const env: Record<string, string> = {};
  const files = svc.env_file === undefined ? [] : Array.isArray(svc.env_file) ? svc.env_file : [svc.env_file];
  for (const f of files) Object.assign(env, parseEnvFile(readFileSync(join(ROOT, String(f)), 'utf8')));
  const e = svc.environment;
  if (Array.isArray(e)) {
    for (const item of e) {
      const s = String(item);
      const eq = s.indexOf('=');
      env[eq < 0 ? s : s.slice(0, eq)] = eq < 0 ? '' : s.slice(eq + 1);
    }
  } else if (e !== undefined && e !== null) {
    for (const [k, v] of Object.entries(e as Record<string, unknown>)) env[k] = String(v);
  }
  return env;
}

function commandOf(svc: Service): string[] | undefined {
  if (svc.command === undefined) return undefined;
  return Array.isArray(svc.command) ? svc.command.map(String) : String(svc.command).split(/\s+/);
}

/** The image's default CMD (from the Dockerfile) runs the proxy. */
const isProxy = (svc: Service): boolean => {
  const cmd = commandOf(svc);
  return cmd === undefined || cmd.includes('dist/src/main.js');
};

/** The ports a service listens on, worked out with the same parsers the programs use. */
function listenPorts(name: string): number[] {
  const svc = services[name] as Service;
  const env = envOf(svc);
  if (isProxy(svc)) {
    const r = loadConfig(env);
    if (!r.ok) throw new Error(`${name}: ${r.problems.join('; ')}`);
    return [r.config.port, r.config.adminPort];
  }
  const cmd = commandOf(svc) ?? [];
  if (cmd.includes('dist/src/guardian/main.js')) return [readGuardianConfig(env, ROOT).config.port];
  if (cmd.includes('dist/src/demo/cake-baker.js')) return [Number(env['PORT'] ?? '8000')];
  if (name === 'task-store') return ((svc.expose as unknown[] | undefined) ?? []).map(Number);
  return [];
}

const URL_VARS = ['UPSTREAM_URL', 'GUARDIAN_URL', 'SIDECAR_URL', 'SIDECAR_READY_URL', 'PUBLIC_URL', 'IMPOSTOR_URL', 'ASSERTION_AUDIENCE', 'TASK_STORE_URL'];

/** The task owner store: Debian's redis-server from its own small Dockerfile, not a node program. */
const STORE = 'task-store';

describe('docker-compose.yml', () => {
  test('parses into the five demo services and the task store', () => {
    expect(names.sort()).toEqual(['cake-baker', 'cake-baker-guard', 'cooking-assistant', 'cooking-assistant-guard', 'guardian', STORE]);
  });

  test("the task store builds from Dockerfile.redis (the proxy's Debian base image, Debian's redis-server) and runs with init: true", () => {
    const svc = services[STORE] as Service;
    expect(svc.init).toBe(true);
    expect(svc.build).toEqual({ context: '.', dockerfile: 'Dockerfile.redis' });
    expect(svc.image).toBeUndefined();
    expect(svc.ports).toBeUndefined();
    const docker = readFileSync(join(ROOT, 'Dockerfile.redis'), 'utf8');
    expect(docker).toMatch(/^ARG NODE_IMAGE=docker\.io\/library\/node:24-bookworm-slim$/m);
    expect(docker).toMatch(/^FROM \$\{NODE_IMAGE\}$/m);
    expect(docker).toMatch(/apt-get install .*redis-server/);
    expect(commandOf(svc)?.[0]).toBe('redis-server');
  });

  test('the subset parser agrees with a full YAML parser, when one is installed', () => {
    let full: { load(s: string): unknown } | undefined;
    try {
      // js-yaml usually comes with the test tooling; the check is skipped without it.
      full = require('js-yaml') as { load(s: string): unknown };
    } catch {
      full = undefined;
    }
    if (full !== undefined) expect(parseYamlSubset(composeText)).toEqual(full.load(composeText));
  });

  const programs = names.filter((n) => n !== STORE);

  test.each(programs)('%s builds from the Dockerfile target that carries its program, runs with init: true, pulls no image', (name) => {
    const svc = services[name] as Service;
    expect(svc.init).toBe(true);
    const build = svc.build as Record<string, unknown>;
    expect(build['context']).toBe('.');
    expect(build['dockerfile'] ?? 'Dockerfile').toBe('Dockerfile');
    const script = (commandOf(svc) ?? ['node', 'dist/src/main.js'])[1] ?? '';
    const wanted = script.startsWith('dist/src/demo/') ? 'demo' : script === 'dist/src/guardian/main.js' ? 'guardian' : 'proxy';
    expect(build['target']).toBe(wanted);
    expect(svc.image).toBeUndefined();
    expect(svc.ports).toBeUndefined(); // nothing is published on the host: no port clashes
  });

  test.each(names)('%s: environment values and exposed ports are strings (podman-compose passes them as arguments)', (name) => {
    const svc = services[name] as Service;
    if (svc.environment !== undefined && svc.environment !== null && !Array.isArray(svc.environment)) {
      for (const v of Object.values(svc.environment as Record<string, unknown>)) expect(typeof v).toBe('string');
    }
    for (const p of (svc.expose as unknown[] | undefined) ?? []) expect(typeof p).toBe('string');
  });

  test.each(programs)('%s runs a program the image contains', (name) => {
    const cmd = commandOf(services[name] as Service) ?? ['node', 'dist/src/main.js'];
    expect(cmd[0]).toBe('node');
    const script = cmd[1] ?? '';
    expect(script).toMatch(/^dist\/src\/.+\.js$/);
    expect(existsSync(join(ROOT, script.replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
  });

  const proxies = names.filter((n) => isProxy(services[n] as Service));

  test('the two sidecars are the proxy services', () => {
    expect(proxies.sort()).toEqual(['cake-baker-guard', 'cooking-assistant-guard']);
  });

  test.each(proxies)('%s has UPSTREAM_URL and GUARDIAN_URL, and its environment passes loadConfig', (name) => {
    const env = envOf(services[name] as Service);
    expect(env['UPSTREAM_URL']).toBeTruthy();
    expect(env['GUARDIAN_URL']).toBeTruthy();
    const r = loadConfig(env);
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  test("roles line up: the baker's sidecar is ROLE=server in front of the baker, the assistant's is ROLE=client in front of it", () => {
    const server = loadConfig(envOf(services['cake-baker-guard'] as Service));
    const client = loadConfig(envOf(services['cooking-assistant-guard'] as Service));
    if (!server.ok || !client.ok) throw new Error('invalid sidecar configuration');
    expect(server.config.role).toBe('server');
    expect(server.config.upstreamUrl.hostname).toBe('cake-baker');
    expect(client.config.role).toBe('client');
    expect(client.config.upstreamUrl.hostname).toBe('cake-baker-guard');
    expect(client.config.observedAgent.name).toBe('Cooking assistant');
    expect(client.config.guardianUrl?.href).toBe(server.config.guardianUrl?.href);
  });

  test('every URL between services names a service and a port it listens on', () => {
    const links: string[] = [];
    for (const name of names) {
      const env = envOf(services[name] as Service);
      for (const v of URL_VARS) {
        const value = env[v];
        if (value === undefined) continue;
        const u = new URL(value);
        const port = Number(u.port || (u.protocol === 'https:' ? 443 : u.protocol === 'redis:' ? 6379 : 80));
        expect({ from: name, v, host: u.hostname, isService: names.includes(u.hostname) }).toEqual({ from: name, v, host: u.hostname, isService: true });
        expect({ from: name, v, port, listening: listenPorts(u.hostname).includes(port) }).toEqual({ from: name, v, port, listening: true });
        if (v === 'PUBLIC_URL') expect(u.hostname).toBe(name);
        links.push(`${name} ${v} -> ${u.hostname}:${port}`);
      }
    }
    expect(links.length).toBeGreaterThanOrEqual(10);
  });

  test("the guardian's policy file is in the image and valid", () => {
    const env = envOf(services['guardian'] as Service);
    const policyFile = readGuardianConfig(env, ROOT).config.policyFile;
    expect(policyFile.startsWith(join(ROOT, 'config'))).toBe(true); // config/ is copied into the image
    expect(() => loadPolicy(policyFile)).not.toThrow();
  });

  test('depends_on names services and does not wait on health checks', () => {
    for (const name of names) {
      const deps = (services[name] as Service).depends_on;
      if (deps === undefined) continue;
      expect(Array.isArray(deps)).toBe(true);
      for (const d of deps as unknown[]) expect(names).toContain(d);
    }
    expect(composeText).not.toMatch(/service_healthy|healthcheck/);
  });
});

describe('signed identity assertions between the sidecars', () => {
  test("the baker's sidecar requires a verified caller and trusts exactly the key the assistant's sidecar signs with", async () => {
    const server = loadConfig(envOf(services['cake-baker-guard'] as Service));
    const client = loadConfig(envOf(services['cooking-assistant-guard'] as Service));
    if (!server.ok || !client.ok) throw new Error('invalid sidecar configuration');
    expect(server.config.identity.policy).toBe('required');
    // The assistant signs for the audience the baker's sidecar accepts (its URL in compose).
    expect(client.config.identity.audiences).toEqual(server.config.identity.audiences);
    expect(server.config.identity.audiences).toEqual([client.config.upstreamUrl.origin]);
    const keyFile = client.config.identity.signingKeyFile as string;
    const trustFile = server.config.identity.trustJwksFile as string;
    // Relative to the image's WORKDIR (/app), where config/ is copied; clearly marked as demo keys.
    for (const f of [keyFile, trustFile]) {
      expect(f).toMatch(/^config\/demo-keys\/.*DEMO-ONLY/);
      expect(existsSync(join(ROOT, f))).toBe(true);
    }
    const signing = await parseSigningKey(readFileSync(join(ROOT, keyFile), 'utf8'));
    const trusted = parseTrustedJwks(readFileSync(join(ROOT, trustFile), 'utf8'));
    expect(trusted.keys.map((k) => k.kid)).toEqual([signing.kid]);
    expect(trusted.keys[0]).toMatchObject({ x: signing.publicJwk.x, y: signing.publicJwk.y, crv: signing.publicJwk.crv });
    expect(readFileSync(join(ROOT, 'config', 'demo-keys', 'README.md'), 'utf8')).toMatch(/DEMO-ONLY keys — never use them anywhere else/);
  });

  test("the scripted conversation includes the impostor (it calls the baker's sidecar directly)", () => {
    expect(envOf(services['cooking-assistant'] as Service)['IMPOSTOR_URL']).toBe('http://cake-baker-guard:8080');
  });
});

describe('config/*.env', () => {
  test.each([
    ['cake-baker-guard.env', 'server'],
    ['cooking-assistant-guard.env', 'client'],
  ])('%s is a complete proxy configuration for ROLE=%s', (file, role) => {
    const env = parseEnvFile(readFileSync(join(ROOT, 'config', file), 'utf8'));
    const r = loadConfig(env);
    expect(r.ok ? [] : r.problems).toEqual([]);
    if (r.ok) expect(r.config.role).toBe(role);
    for (const [k, v] of Object.entries(env)) expect({ k, quoted: /^["']/.test(v) }).toEqual({ k, quoted: false });
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const instructions = text.split('\n').filter((l) => /^[A-Z]+\s/.test(l));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    license: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    scripts: Record<string, string>;
  };

  /** Instructions per stage, by stage name (`FROM x AS name`). */
  const stages = new Map<string, { from: string; lines: string[] }>();
  let current: string[] = [];
  for (const line of instructions) {
    const from = /^FROM (\S+)(?: AS (\S+))?$/.exec(line);
    if (from !== null) {
      current = [];
      stages.set(from[2] ?? `stage${stages.size}`, { from: from[1] as string, lines: current });
    } else {
      current.push(line);
    }
  }
  const stage = (name: string): string[] => stages.get(name)?.lines ?? [];
  const cmdOf = (name: string): unknown =>
    JSON.parse(
      stage(name)
        .filter((l) => l.startsWith('CMD '))
        .pop()
        ?.slice(4) ?? 'null',
    );

  test('Node 24 LTS base (Node 20 is past its end of life); the runtime images start from scratch', () => {
    expect(text).toMatch(/^ARG NODE_IMAGE=docker\.io\/library\/node:24-bookworm-slim$/m);
    for (const name of ['build', 'prod-deps', 'rootfs']) expect(stages.get(name)?.from).toBe('${NODE_IMAGE}');
    expect(stages.get('runtime')?.from).toBe('scratch');
    for (const name of ['guardian', 'demo', 'proxy']) expect(stages.get(name)?.from).toBe('runtime');
    expect([...stages.keys()].pop()).toBe('proxy'); // the default target
  });

  test('builds with npm ci + tsc; the runtime has production dependencies and compiled code, demo agents only in the demo target', () => {
    expect(stage('build')).toContain('RUN npm ci --no-audit --no-fund');
    expect(text).toMatch(/RUN npm run build/);
    expect(text).toMatch(/mv out\/prod\/src\/demo out\/demo\/demo/);
    expect(stage('prod-deps').join('\n')).toMatch(/RUN npm ci --omit=dev/);
    expect(stage('runtime')).toEqual(
      expect.arrayContaining([
        'COPY --from=prod-deps /app/node_modules ./node_modules',
        'COPY --from=build /app/out/prod/src ./dist/src',
        // npm start's files: the loader, the bundle and its code cache (made by the build stage's node, this image's).
        'COPY --from=build /app/out/prod/a2a-guard.js /app/out/prod/a2a-guard.bundle.js /app/out/prod/a2a-guard.bundle.cache ./dist/',
        'COPY config ./config',
      ]),
    );
    expect(stage('runtime').join('\n')).not.toMatch(/demo|@a2a-js/);
    expect(stage('demo')).toEqual(
      expect.arrayContaining([
        'COPY --from=build /app/out/demo/demo ./dist/src/demo',
        'COPY --from=build /app/node_modules/@a2a-js ./node_modules/@a2a-js',
        'COPY --from=build /app/node_modules/jose ./node_modules/jose',
      ]),
    );
  });

  test('the demo target copies the A2A SDK with every dependency it has', () => {
    const sdk = JSON.parse(readFileSync(join(ROOT, 'node_modules/@a2a-js/sdk/package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    expect(Object.keys(sdk.dependencies ?? {})).toEqual(['jose']);
  });

  test('runs as a numeric user, so Kubernetes can check runAsNonRoot', () => {
    expect(stage('runtime')).toContain('USER 10001:10001');
    for (const name of ['guardian', 'demo', 'proxy']) expect(stage(name).some((l) => l.startsWith('USER '))).toBe(false);
  });

  test('OCI labels: version (= package.json), licence (= package.json), source and revision', () => {
    expect(stage('runtime')).toContain(`ARG VERSION=${pkg.version}`);
    const labels = text.slice(text.indexOf('LABEL '));
    expect(labels).toMatch(/org\.opencontainers\.image\.version="\$\{VERSION\}"/);
    expect(labels).toContain(`org.opencontainers.image.licenses="${pkg.license}"`);
    expect(labels).toMatch(/org\.opencontainers\.image\.source="\$\{SOURCE_URL\}"/);
    expect(labels).toMatch(/org\.opencontainers\.image\.revision="\$\{REVISION\}"/);
  });

  test('each target runs its program, exposes its ports and checks its health', () => {
    // The bundled proxy (scripts/bundle.ts), the same command as `npm start`.
    expect(cmdOf('proxy')).toEqual(['node', 'dist/a2a-guard.js']);
    expect(pkg.scripts['start']).toBe('exec node dist/a2a-guard.js');
    expect(stage('build')).toContain('COPY scripts/bundle.ts ./scripts/bundle.ts');
    expect(stage('proxy')).toContain('EXPOSE 8080 9090');
    expect(stage('proxy').find((l) => l.startsWith('HEALTHCHECK'))).toMatch(/CMD \["node", "dist\/src\/healthcheck\.js"\]$/);
    expect(cmdOf('guardian')).toEqual(['node', 'dist/src/guardian/main.js']);
    expect(stage('guardian')).toContain('EXPOSE 7070');
    expect(stage('guardian').find((l) => l.startsWith('HEALTHCHECK'))).toMatch(/CMD \["node", "dist\/src\/healthcheck\.js", "guardian"\]$/);
    expect(cmdOf('demo')).toEqual(['node', 'dist/src/demo/cake-baker.js']);
    expect(stage('demo')).toContain('HEALTHCHECK NONE');
    for (const script of ['src/healthcheck.ts', 'src/main.ts', 'src/guardian/main.ts', 'src/demo/cake-baker.ts'])
      expect(existsSync(join(ROOT, script))).toBe(true);
  });

  test("every package the production code imports is a production dependency; the demo's are in the production tree", () => {
    const builtins = new Set(builtinModules);
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((f) => {
        const p = join(dir, f);
        return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
      });
    const packagesOf = (file: string): string[] =>
      [
        ...readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l))
          .join('\n')
          .matchAll(/(?:from|import\(|require\()\s*'([^'.][^']*)'/g),
      ]
        .map((m) => m[1] as string)
        .filter((spec) => !spec.startsWith('node:') && !builtins.has(spec))
        .map((spec) =>
          spec
            .split('/')
            .slice(0, spec.startsWith('@') ? 2 : 1)
            .join('/'),
        );
    const prod = new Set<string>();
    const demo = new Set<string>();
    for (const f of files(join(ROOT, 'src'))) for (const p of packagesOf(f)) (relative(ROOT, f).startsWith('src/demo/') ? demo : prod).add(p);
    expect([...prod].filter((p) => pkg.dependencies[p] === undefined)).toEqual([]);
    // The demo image copies the production tree (`npm ci --omit=dev`): a demo package is a dependency, or one npm keeps
    // there anyway (express: an optional peer of @a2a-js/sdk, "devOptional" in the lock file, never plain "dev").
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean } | undefined> };
    expect(
      [...demo].filter(
        (p) => pkg.dependencies[p] === undefined && (lock.packages[`node_modules/${p}`] === undefined || lock.packages[`node_modules/${p}`]?.dev === true),
      ),
    ).toEqual([]);
    // The gRPC binding reads and writes messages with the SDK's generated code (loaded only with GRPC_PORT).
    expect(pkg.dependencies['@a2a-js/sdk']).toBeDefined();
    expect(prod.size).toBeGreaterThanOrEqual(5);
  });
});

describe('the YAML subset parser', () => {
  test('reads mappings, sequences, flow sequences and quoted scalars; refuses the rest', () => {
    expect(parseYamlSubset('a:\n  b: "x # y"\n  c: [1, "two", three]\n  d:\n    - "8080"\n    - 9090\n  e: true # c\n')).toEqual({
      a: { b: 'x # y', c: [1, 'two', 'three'], d: ['8080', 9090], e: true },
    });
    expect(parseYamlSubset("k:\n- a\n- 'b''c'\n")).toEqual({ k: ['a', "b'c"] });
    expect(() => parseYamlSubset('a: &anchor 1\n')).toThrow(/unsupported/);
    expect(() => parseYamlSubset('a:\n  - x: 1\n')).toThrow(/scalar sequence items/);
    expect(() => parseYamlSubset('a: 1\n    b: 2\n')).toThrow(/indentation/);
  });
});
