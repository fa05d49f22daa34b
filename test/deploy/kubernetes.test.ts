/**
 * The Kubernetes deployment, checked without a cluster:
 * - deploy/kubernetes/*.yaml pass the Kubernetes API schemas and have no field the API does not know;
 * - what they promise: native sidecars with probes on the admin port, a locked-down security
 *   context everywhere, no service links, grace periods that cover the drain, every configuration
 *   accepted by the programs' own parsers (also with hostile service links injected), every URL
 *   pointing at something that listens there, references that exist;
 * - the Helm chart (real helm, pinned, from scripts/install-helm.sh) lints, renders exactly the
 *   plain files with the demo values, and renders valid objects with its defaults and variations;
 * - the podman conversion used by `npm run k8s:play` (scripts/k8s-podman.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll, load } from 'js-yaml';
import { loadConfig, type Config } from '../../src/config/config';
import { parseEnvFile } from '../../src/demo/envfile';
import { readGuardianConfig } from '../../src/guardian/main';
import { parsePolicy } from '../../src/guardian/policy';
import { CHART, DEMO_ARGS, helmTemplate, plainFiles, readPlainFiles } from '../../scripts/k8s-render';
import { parseManifests, toPodman } from '../../scripts/k8s-podman';
import {
  type Obj,
  allContainersOf,
  containersOf,
  envOf,
  helm,
  initContainersOf,
  nameOf,
  podSpec,
  podTemplate,
  renderFailure,
  schemaProblems,
  selects,
  unknownFieldProblems,
} from './manifests';

const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

const plain = readPlainFiles();
const docs: Obj[] = [...plain.values()].flatMap((text) => loadAll(text) as Obj[]).filter((d) => d !== null);
const byKind = (kind: string, from: readonly Obj[] = docs): Obj[] => from.filter((d) => d['kind'] === kind);
const secrets = byKind('Secret');
const workloads = docs.filter((d) => podTemplate(d) !== undefined);
const workload = (name: string): Obj => {
  const w = workloads.find((d) => nameOf(d) === name);
  if (w === undefined) throw new Error(`no workload ${name}`);
  return w;
};

const isSidecar = (c: Obj): boolean => c['name'] === 'a2a-guard';
const isGuardian = (c: Obj): boolean => JSON.stringify(c['command'] ?? []).includes('dist/src/guardian/main.js');

function proxyConfig(c: Obj, extra: Record<string, string> = {}): Config {
  const r = loadConfig({ ...extra, ...envOf(c, secrets) });
  if (!r.ok) throw new Error(`${String(c['name'])}: ${r.problems.join('; ')}`);
  return r.config;
}

/** Where the programs of a pod listen (worked out with the programs' own parsers). */
function listeners(w: Obj): Array<{ container: string; port: number; host: string }> {
  const out: Array<{ container: string; port: number; host: string }> = [];
  for (const c of allContainersOf(w)) {
    const name = String(c['name']);
    const env = envOf(c, secrets);
    if (isSidecar(c)) {
      const cfg = proxyConfig(c);
      out.push({ container: name, port: cfg.port, host: cfg.host }, { container: name, port: cfg.adminPort, host: cfg.adminHost });
    } else if (isGuardian(c)) {
      const g = readGuardianConfig(env, '/app').config;
      out.push({ container: name, port: g.port, host: g.host });
    } else if (JSON.stringify(c['command']).includes('cake-baker.js')) {
      out.push({ container: name, port: Number(env['PORT'] ?? '8000'), host: env['HOST'] ?? '0.0.0.0' });
    }
  }
  return out;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

const render = (args: readonly string[]): Obj[] => parseManifests(helmTemplate(helm(), args));
const DEFAULTS: readonly string[] = [];
const EXTERNAL_GUARDIAN = [
  ...DEMO_ARGS,
  '--set',
  'guardianUrl=https://guardian.example/aos',
  '--set',
  'guardian.enabled=false',
  '--set',
  'guardianToken.existingSecret=my-token',
];
let renders: Array<{ tag: string; objects: Obj[] }> | undefined;
/** The chart rendered with its defaults and with an external guardian (the demo values are the plain files). */
const chartRenders = (): Array<{ tag: string; objects: Obj[] }> =>
  (renders ??= [
    { tag: 'defaults', objects: render(DEFAULTS) },
    { tag: 'external-guardian', objects: render(EXTERNAL_GUARDIAN) },
  ]);
beforeAll(() => void helm(), 180_000);

describe('deploy/kubernetes: the API schemas', () => {
  test('the demo topology: token, policy, guardian (Deployment, Service, PDB), Cake Baker (Deployment, Service), Cooking assistant (Job)', () => {
    expect([...plain.keys()]).toEqual(['10-guardian-token.yaml', '11-policy.yaml', '20-guardian.yaml', '30-cake-baker.yaml', '31-cooking-assistant.yaml']);
    expect(docs.map((d) => `${String(d['kind'])}/${nameOf(d)}`).sort()).toEqual([
      'ConfigMap/a2a-guard-policy',
      'Deployment/a2a-guard-guardian',
      'Deployment/cake-baker',
      'Job/cooking-assistant',
      'PodDisruptionBudget/a2a-guard-guardian',
      'Secret/a2a-guard-guardian-token',
      'Service/a2a-guard-guardian',
      'Service/cake-baker',
    ]);
  });

  test('every object passes its Kubernetes API schema (kubernetes-models)', () => {
    expect(schemaProblems(docs)).toEqual([]);
  });

  test('no object has a field the Kubernetes API does not know; the check finds a misspelt one', () => {
    // One program for everything (plain files, chart renders, a control with a typo).
    const typo = structuredClone(workload('cake-baker'));
    (podSpec(typo) as Obj)['enableServiceLink'] = false;
    const problems = unknownFieldProblems([
      ...docs.map((doc) => ({ tag: 'plain', doc })),
      ...chartRenders().flatMap(({ tag, objects }) => objects.map((doc) => ({ tag, doc }))),
      { tag: 'control', doc: typo },
    ]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^control apps\/v1\/Deployment cake-baker: Object literal may only specify known properties, and '"enableServiceLink"' does not exist/,
    );
  }, 90_000);

  test('the schema check finds a wrong type and a missing required field', () => {
    const wrongType = structuredClone(workload('cake-baker'));
    ((initContainersOf(wrongType)[0] as Obj)['securityContext'] as Obj)['runAsUser'] = '10001';
    expect(schemaProblems([wrongType]).join()).toMatch(/runAsUser must be integer/);
    const noName = structuredClone(workload('cake-baker'));
    delete (containersOf(noName)[0] as Obj)['name'];
    expect(schemaProblems([noName]).join()).toMatch(/must have required property .?name/);
  });
});

describe('deploy/kubernetes: what the manifests promise', () => {
  test('a2a-guard runs as a native sidecar (init container, restartPolicy: Always) in every agent pod, never as an ordinary container', () => {
    const agents = workloads.filter((w) => !allContainersOf(w).some(isGuardian));
    expect(agents.map(nameOf).sort()).toEqual(['cake-baker', 'cooking-assistant']);
    for (const w of agents) {
      const sidecars = initContainersOf(w).filter(isSidecar);
      expect({ w: nameOf(w), sidecars: sidecars.length, restartPolicy: sidecars[0]?.['restartPolicy'] }).toEqual({
        w: nameOf(w),
        sidecars: 1,
        restartPolicy: 'Always',
      });
      expect(containersOf(w).filter(isSidecar)).toEqual([]);
    }
    expect(podSpec(workload('cooking-assistant'))['restartPolicy']).toBe('Never');
  });

  test("probes on the admin port: startup and liveness ask /healthz, readiness asks /readyz; the guardian's on its port", () => {
    for (const w of workloads) {
      for (const c of allContainersOf(w).filter(isSidecar)) {
        const cfg = proxyConfig(c);
        const admin = ((c['ports'] as Obj[]) ?? []).find((p) => p['name'] === 'admin');
        expect(admin?.['containerPort']).toBe(cfg.adminPort);
        expect(cfg.adminHost).toBe('0.0.0.0'); // the kubelet probes the pod IP
        const probe = (k: string): unknown => (c[k] as Obj | undefined)?.['httpGet'];
        expect([probe('startupProbe'), probe('readinessProbe'), probe('livenessProbe')]).toEqual([
          { path: '/healthz', port: 'admin' },
          { path: '/readyz', port: 'admin' },
          { path: '/healthz', port: 'admin' },
        ]);
      }
    }
    const g = containersOf(workload('a2a-guard-guardian')).find(isGuardian) as Obj;
    const aos = ((g['ports'] as Obj[]) ?? []).find((p) => p['name'] === 'aos');
    expect(aos?.['containerPort']).toBe(readGuardianConfig(envOf(g, secrets), '/app').config.port);
    for (const k of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect((g[k] as Obj)['httpGet']).toEqual({ path: '/healthz', port: 'aos' });
  });

  test('every container: numeric non-root user, read-only root file system, all capabilities dropped, no privilege escalation', () => {
    for (const w of workloads) {
      const pod = podSpec(w)['securityContext'] as Obj;
      expect({ w: nameOf(w), pod }).toEqual({
        w: nameOf(w),
        pod: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      });
      for (const c of allContainersOf(w)) {
        const sc = c['securityContext'] as Obj;
        expect({ c: c['name'], sc }).toEqual({
          c: c['name'],
          sc: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
          },
        });
      }
    }
  });

  test('no Service variables and no API token in any pod', () => {
    for (const w of workloads) {
      expect({ w: nameOf(w), links: podSpec(w)['enableServiceLinks'], token: podSpec(w)['automountServiceAccountToken'] }).toEqual({
        w: nameOf(w),
        links: false,
        token: false,
      });
    }
  });

  test("the grace period covers the agent's preStop sleep, the sidecar's drain (DRAIN_TIMEOUT_MS) and a margin", () => {
    for (const w of workloads) {
      const grace = podSpec(w)['terminationGracePeriodSeconds'] as number;
      const sidecar = initContainersOf(w).find(isSidecar);
      if (sidecar === undefined) {
        expect(grace).toBeGreaterThanOrEqual(2 + 3); // the guardian closes within 2 s
        continue;
      }
      const preStop = Math.max(
        0,
        ...containersOf(w).map((c) =>
          Number((((c['lifecycle'] as Obj | undefined)?.['preStop'] as Obj | undefined)?.['sleep'] as Obj | undefined)?.['seconds'] ?? 0),
        ),
      );
      const { drainTimeoutMs, shutdownDelayMs } = proxyConfig(sidecar);
      const drainSeconds = Math.ceil((shutdownDelayMs + drainTimeoutMs) / 1000);
      expect({ w: nameOf(w), enough: grace >= preStop + drainSeconds + 5 }).toEqual({ w: nameOf(w), enough: true });
    }
  });

  test('every a2a-guard configuration passes loadConfig in its A2A_GUARD_ form, unchanged by injected service links', () => {
    const links = {
      GUARDIAN_PORT: 'tcp://10.96.0.7:7070',
      ADMIN_PORT: 'tcp://10.96.0.8:9090',
      PORT: 'tcp://10.96.0.9:80',
      UPSTREAM_URL: 'tcp://10.96.0.10:80',
    };
    for (const w of workloads) {
      for (const c of initContainersOf(w).filter(isSidecar)) {
        expect(Object.keys(envOf(c, secrets)).filter((k) => !k.startsWith('A2A_GUARD_'))).toEqual([]);
        expect(proxyConfig(c, links)).toEqual(proxyConfig(c));
        expect(proxyConfig(c).guardianToken).toBeDefined();
      }
    }
    const g = containersOf(workload('a2a-guard-guardian')).find(isGuardian) as Obj;
    expect(readGuardianConfig({ ...links, ...envOf(g, secrets) }, '/app')).toEqual(readGuardianConfig(envOf(g, secrets), '/app'));
  });

  test("the sidecars are configured as the compose demo's (config/*.env), addresses aside", () => {
    const pick = (c: Config) => ({
      role: c.role,
      port: c.port,
      adminPort: c.adminPort,
      failMode: c.failMode,
      inspectResponses: c.inspectResponses,
      reasoningHeader: c.reasoningHeader,
      guardianTimeoutMs: c.guardianTimeoutMs,
      observedAgent: c.observedAgent,
      logLevel: c.logLevel,
    });
    for (const [name, file] of [
      ['cake-baker', 'cake-baker-guard.env'],
      ['cooking-assistant', 'cooking-assistant-guard.env'],
    ] as const) {
      const compose = loadConfig(parseEnvFile(readFileSync(join(ROOT, 'config', file), 'utf8')));
      if (!compose.ok) throw new Error(compose.problems.join());
      expect(pick(proxyConfig(initContainersOf(workload(name)).find(isSidecar) as Obj))).toEqual(pick(compose.config));
    }
  });

  test("the guardian requires the sidecars' token and serves the demo policy from the ConfigMap", () => {
    const g = containersOf(workload('a2a-guard-guardian')).find(isGuardian) as Obj;
    const cfg = readGuardianConfig(envOf(g, secrets), '/app');
    expect(cfg.problems).toEqual([]);
    for (const w of workloads) for (const c of initContainersOf(w).filter(isSidecar)) expect(proxyConfig(c).guardianToken).toBe(cfg.config.token);
    const mount = ((g['volumeMounts'] as Obj[]) ?? []).find((m) => cfg.config.policyFile.startsWith(`${String(m['mountPath'])}/`)) as Obj;
    expect(mount['readOnly']).toBe(true);
    const volume = ((podSpec(workload('a2a-guard-guardian'))['volumes'] as Obj[]) ?? []).find((v) => v['name'] === mount['name']) as Obj;
    const configMap = byKind('ConfigMap').find((m) => nameOf(m) === (volume['configMap'] as Obj)['name']) as Obj;
    const key = cfg.config.policyFile.slice(String(mount['mountPath']).length + 1);
    const policyText = String((configMap['data'] as Obj)[key]);
    expect(JSON.parse(policyText)).toEqual(JSON.parse(readFileSync(join(ROOT, 'config/demo-policy.json'), 'utf8')));
    expect(() => parsePolicy(JSON.parse(policyText))).not.toThrow();
  });

  test('every URL leads to something listening there: in the pod over loopback, else through a Service to a declared port', () => {
    const services = byKind('Service');
    const checked: string[] = [];
    for (const w of workloads) {
      for (const c of allContainersOf(w)) {
        for (const [k, v] of Object.entries(envOf(c, secrets))) {
          if (!/(^|_)(URL)$/.test(k) || !/^https?:/.test(v)) continue;
          if (/OBSERVED_AGENT_(URL|PROVIDER_URL)$/.test(k)) continue; // identities, not addresses
          const u = new URL(v);
          const port = Number(u.port || 80);
          if (LOOPBACK.has(u.hostname)) {
            expect({ w: nameOf(w), k, listening: listeners(w).some((l) => l.port === port) }).toEqual({ w: nameOf(w), k, listening: true });
          } else {
            const svc = services.find((s) => nameOf(s) === u.hostname);
            expect({ k, v, service: svc !== undefined }).toEqual({ k, v, service: true });
            const sp = (((svc as Obj)['spec'] as Obj)['ports'] as Obj[]).find((p) => p['port'] === port) as Obj;
            expect({ k, v, servicePort: sp !== undefined }).toEqual({ k, v, servicePort: true });
            const targets = workloads.filter((t) => selects(svc as Obj, t));
            expect(targets).toHaveLength(1);
            const target = targets[0] as Obj;
            const declared = allContainersOf(target)
              .flatMap((tc) => ((tc['ports'] as Obj[]) ?? []).map((p) => ({ c: String(tc['name']), name: p['name'], port: p['containerPort'] })))
              .find((p) => p.name === sp['targetPort']);
            const l = listeners(target).find((x) => x.container === declared?.c && x.port === declared?.port);
            expect({ k, v, listensOnPodIp: l !== undefined && !LOOPBACK.has(l.host) }).toEqual({ k, v, listensOnPodIp: true });
          }
          checked.push(`${nameOf(w)}/${String(c['name'])} ${k}`);
        }
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(8);
  });

  test('server agents listen on loopback only, so only their sidecar reaches them; their Service targets the sidecar', () => {
    const baker = workload('cake-baker');
    const agent = listeners(baker).find((l) => l.container === 'cake-baker');
    expect(agent?.host).toBe('127.0.0.1');
    expect(proxyConfig(initContainersOf(baker).find(isSidecar) as Obj).upstreamUrl.href).toBe(`http://127.0.0.1:${agent?.port}/`);
    const svc = byKind('Service').find((s) => nameOf(s) === 'cake-baker') as Obj;
    expect(((svc['spec'] as Obj)['ports'] as Obj[]).map((p) => p['targetPort'])).toEqual(['a2a']);
    // The client-side sidecar is for its own pod only.
    expect(proxyConfig(initContainersOf(workload('cooking-assistant')).find(isSidecar) as Obj).host).toBe('127.0.0.1');
  });

  test('images are the ones the Dockerfile builds, at the package version', () => {
    const images = new Set(workloads.flatMap((w) => allContainersOf(w).map((c) => String(c['image']))));
    expect([...images].sort()).toEqual([`a2a-guard-demo:${pkg.version}`, `a2a-guard:${pkg.version}`]);
    for (const w of workloads) for (const c of initContainersOf(w).filter(isSidecar)) expect(c['image']).toBe(`a2a-guard:${pkg.version}`);
  });
});

describe('the Helm chart', () => {
  const renderFails = renderFailure;

  test('helm lint passes with the default and the demo values', () => {
    for (const args of [[], DEMO_ARGS]) {
      const out = execFileSync(helm(), ['lint', CHART, ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      expect(out).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  test('deploy/kubernetes is exactly the chart rendered with the demo values (npm run k8s:render)', () => {
    const fresh = plainFiles(helmTemplate(helm(), DEMO_ARGS));
    expect([...fresh.keys()]).toEqual([...plain.keys()]);
    for (const [file, text] of fresh) expect({ file, text }).toEqual({ file, text: plain.get(file) });
  });

  test("the chart's default policy is config/policy.json; its appVersion is the package version", () => {
    expect(readFileSync(join(ROOT, CHART, 'files/policy.json'), 'utf8')).toBe(readFileSync(join(ROOT, 'config/policy.json'), 'utf8'));
    const chart = load(readFileSync(join(ROOT, CHART, 'Chart.yaml'), 'utf8')) as Obj;
    expect([chart['appVersion'], chart['version'], chart['kubeVersion']]).toEqual([pkg.version, pkg.version, '>=1.29.0-0']);
  });

  test('default values: the reference guardian with a random token, valid objects', () => {
    const out = (chartRenders()[0] as { objects: Obj[] }).objects;
    expect(out.map((d) => `${String(d['kind'])}/${nameOf(d)}`).sort()).toEqual([
      'ConfigMap/a2a-guard-policy',
      'Deployment/a2a-guard-guardian',
      'PodDisruptionBudget/a2a-guard-guardian',
      'Secret/a2a-guard-guardian-token',
      'Service/a2a-guard-guardian',
    ]);
    const token = String(((byKind('Secret', out)[0] as Obj)['stringData'] as Obj)['token']);
    expect(token).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(schemaProblems(out)).toEqual([]);
    const policy = String(((byKind('ConfigMap', out)[0] as Obj)['data'] as Obj)['policy.json']);
    expect(JSON.parse(policy)).toEqual(JSON.parse(readFileSync(join(ROOT, 'config/policy.json'), 'utf8')));
  });

  test('an external guardian and an existing Secret: no reference guardian objects, the sidecars point at it', () => {
    const out = (chartRenders()[1] as { objects: Obj[] }).objects;
    expect(out.filter((d) => nameOf(d).startsWith('a2a-guard'))).toEqual([]);
    for (const w of out.filter((d) => podTemplate(d) !== undefined)) {
      const env = (initContainersOf(w).find(isSidecar)?.['env'] as Obj[]) ?? [];
      expect(env.find((e) => e['name'] === 'A2A_GUARD_GUARDIAN_URL')?.['value']).toBe('https://guardian.example/aos');
      expect(env.find((e) => e['name'] === 'A2A_GUARD_GUARDIAN_TOKEN')?.['valueFrom']).toEqual({ secretKeyRef: { name: 'my-token', key: 'token' } });
    }
    expect(schemaProblems(out)).toEqual([]);
  });

  test('taskStore.existingSecret: every ROLE=server sidecar reads its Redis URL from that Secret and turns ownership on; clients do not', () => {
    const out = render([...DEMO_ARGS, '--set', 'taskStore.existingSecret=owners-redis']);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'owners-redis' }, stringData: { url: 'rediss://:hunter2@redis.example:6380/0' } };
    const seen: Record<string, unknown> = {};
    for (const w of out.filter((d) => podTemplate(d) !== undefined && initContainersOf(d).some(isSidecar))) {
      const sidecar = initContainersOf(w).find(isSidecar) as Obj;
      const ref = (sidecar['env'] as Obj[]).find((e) => e['name'] === 'A2A_GUARD_TASK_STORE_URL')?.['valueFrom'] as Obj | undefined;
      const cfg = loadConfig(envOf(sidecar, [...byKind('Secret', out), secret]));
      if (!cfg.ok) throw new Error(cfg.problems.join());
      seen[nameOf(w)] = { ref, ownership: cfg.config.ownership.enabled, store: cfg.config.ownership.storeUrl };
    }
    expect(seen).toEqual({
      'cake-baker': { ref: { secretKeyRef: { name: 'owners-redis', key: 'url' } }, ownership: true, store: 'rediss://:hunter2@redis.example:6380/0' },
      'cooking-assistant': { ref: undefined, ownership: false, store: undefined },
    });
    expect(schemaProblems(out)).toEqual([]);
  });

  test('gRPC: a server agent with grpcPort is guarded on sidecar.grpcPort (container and Service port); a client sidecar serves it for its agent', () => {
    const out = render([...DEMO_ARGS, '--set', 'agents[0].grpcPort=9001', '--set', 'agents[1].grpcUpstreamUrl=http://cake-baker:8081']);
    const seen: Record<string, unknown> = {};
    for (const w of out.filter((d) => podTemplate(d) !== undefined && initContainersOf(d).some(isSidecar))) {
      const sidecar = initContainersOf(w).find(isSidecar) as Obj;
      const cfg = loadConfig(envOf(sidecar, byKind('Secret', out)));
      if (!cfg.ok) throw new Error(cfg.problems.join());
      const ports = ((sidecar['ports'] as Obj[] | undefined) ?? []).map((p) => `${String(p['name'])}:${String(p['containerPort'])}`);
      seen[nameOf(w)] = { grpc: cfg.config.grpc?.port, upstream: cfg.config.grpc?.upstreamUrl?.href, host: cfg.config.host, ports };
    }
    expect(seen).toEqual({
      'cake-baker': { grpc: 8081, upstream: 'http://127.0.0.1:9001/', host: expect.any(String), ports: ['a2a:8080', 'a2a-grpc:8081', 'admin:9090'] },
      'cooking-assistant': { grpc: 8081, upstream: 'http://cake-baker:8081/', host: '127.0.0.1', ports: ['admin:9090'] },
    });
    const svc = byKind('Service', out).find((d) => nameOf(d) === 'cake-baker') as Obj;
    expect(((svc['spec'] as Obj)['ports'] as Obj[]).map((p) => [p['name'], p['port'], p['targetPort']])).toEqual([
      ['a2a', 8080, 'a2a'],
      ['a2a-grpc', 8081, 'a2a-grpc'],
    ]);
    expect(schemaProblems(out)).toEqual([]);
    // Without grpcPort nothing of gRPC is rendered (the demo values).
    expect(JSON.stringify(render(DEMO_ARGS))).not.toContain('GRPC');
  });

  test('sidecar settings reach every sidecar; per-agent variables win', () => {
    const out = render([
      ...DEMO_ARGS,
      '--set',
      'sidecar.failMode=open',
      '--set',
      'sidecar.env.MAX_BODY_BYTES=1024',
      '--set',
      'sidecar.drainTimeoutMs=30000',
      '--set',
      'sidecar.env.REASONING_HEADER=x-why',
      '--set',
      'sidecar.shutdownDelayMs=4000',
      '--set',
      'sidecar.readinessRequires=guardian',
    ]);
    const seen: Record<string, string> = {};
    for (const w of out.filter((d) => podTemplate(d) !== undefined && initContainersOf(d).some(isSidecar))) {
      const cfg = loadConfig(envOf(initContainersOf(w).find(isSidecar) as Obj, byKind('Secret', out)));
      if (!cfg.ok) throw new Error(cfg.problems.join());
      expect([cfg.config.failMode, cfg.config.maxBodyBytes, cfg.config.drainTimeoutMs, cfg.config.shutdownDelayMs]).toEqual(['open', 1024, 30000, 4000]);
      expect(cfg.config.readinessRequires).toEqual({ guardian: true, upstream: false });
      expect(podSpec(w)['terminationGracePeriodSeconds']).toBeGreaterThanOrEqual(4 + 30 + 5);
      seen[nameOf(w)] = cfg.config.reasoningHeader;
    }
    // cooking-assistant sets REASONING_HEADER itself (sidecarEnv in the demo values): it wins.
    expect(seen).toEqual({ 'cake-baker': 'x-why', 'cooking-assistant': 'x-aos-reasoning' });
  });

  test('bad values stop the render with a message that names them', () => {
    expect(renderFails([...DEMO_ARGS, '--set', 'agents[0].role=middle'])).toMatch(/at '\/agents\/0\/role': value must be one of 'server', 'client'/);
    expect(renderFails(['--set', 'guardian.enabled=false'])).toMatch(/set guardianUrl, or guardian\.enabled=true/);
    expect(renderFails([...DEMO_ARGS, '--set', 'agents[1].upstreamUrl='])).toMatch(/agents\[cooking-assistant\]\.upstreamUrl is required/);
  });
});

describe('the podman conversion for npm run k8s:play (scripts/k8s-podman.ts)', () => {
  const plan = toPodman(docs);
  const pods = parseManifests(plan.kubeYaml).filter((d) => d['kind'] === 'Pod');
  const podNamed = (n: string): Obj => pods.find((p) => nameOf(p) === n) as Obj;

  test("one Pod per workload, named after the Service that selects it (podman's DNS knows pod names)", () => {
    expect(pods.map(nameOf).sort()).toEqual(['a2a-guard-guardian', 'cake-baker', 'cooking-assistant']);
    expect(plan.pods.find((p) => p.name === 'cooking-assistant')?.runOnce).toEqual(['cooking-assistant']);
    expect((podNamed('cooking-assistant')['spec'] as Obj)['restartPolicy']).toBe('Never');
  });

  test('native sidecars become the first ordinary container; probes, preStop hooks and host-published ports are gone; the rest is kept', () => {
    for (const name of ['cake-baker', 'cooking-assistant']) {
      const spec = podNamed(name)['spec'] as Obj;
      expect(spec['initContainers']).toBeUndefined();
      const [first, second] = spec['containers'] as Obj[];
      expect([first?.['name'], first?.['restartPolicy'], second?.['name']]).toEqual(['a2a-guard', undefined, name]);
      const original = initContainersOf(workload(name)).find(isSidecar) as Obj;
      expect(first?.['env']).toEqual(original['env']);
      expect(first?.['securityContext']).toEqual(original['securityContext']);
      for (const c of spec['containers'] as Obj[])
        for (const k of ['startupProbe', 'readinessProbe', 'livenessProbe', 'lifecycle', 'ports']) expect(c[k]).toBeUndefined();
      expect(spec['terminationGracePeriodSeconds']).toBe(podSpec(workload(name))['terminationGracePeriodSeconds']);
    }
  });

  test('Secrets become podman secrets ({key: base64}); the notes say what differs', () => {
    expect(plan.secrets).toEqual([{ name: 'a2a-guard-guardian-token', data: { token: Buffer.from('demo-token-change-me').toString('base64') } }]);
    expect(plan.notes.join('\n')).toMatch(/Native sidecars .* become ordinary containers/);
    expect(plan.notes.join('\n')).toMatch(/a2a-guard-guardian: 2 replicas in the manifest, 1 pod here/);
    expect(
      parseManifests(plan.kubeYaml)
        .map((d) => d['kind'])
        .sort(),
    ).toEqual(['ConfigMap', 'Pod', 'Pod', 'Pod']);
  });

  test('refuses what podman cannot represent: a Service port that differs from the container port', () => {
    const changed = docs.map((d) => structuredClone(d));
    const svc = changed.find((d) => d['kind'] === 'Service' && nameOf(d) === 'cake-baker') as Obj;
    (((svc['spec'] as Obj)['ports'] as Obj[])[0] as Obj)['port'] = 80;
    expect(() => toPodman(changed)).toThrow(/Service cake-baker: port 80 targets a2a \(8080\)/);
  });
});
