/**
 * mode: sidecar-only: a2a-guard added to a Deployment the user already owns. The chart renders the
 * sidecar's Service, NetworkPolicy and token Secret and a ConfigMap holding a strategic-merge patch;
 * the patch is applied to a sample Deployment the way a user would (Kustomize, built into kubectl)
 * and the result is checked: the agent's own containers unchanged, the sidecar present with the
 * configuration the program accepts, the Service and the NetworkPolicy on the sidecar's ports.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { loadConfig, type Config } from '../../src/config/config';
import { helmTemplate } from '../../scripts/k8s-render';
import { parseManifests } from '../../scripts/k8s-podman';
import {
  type Obj,
  containersOf,
  envOf,
  helm,
  initContainersOf,
  nameOf,
  podSpec,
  renderFailure,
  schemaProblems,
  selects,
  unknownFieldProblems,
} from './manifests';

const EXAMPLE = 'deploy/helm/sidecar-only-values.yaml';

beforeAll(() => void helm(), 180_000);

const dir = mkdtempSync(join(tmpdir(), 'a2a-guard-sidecar-only-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The user's own agent: listens on the pod IP, has its own init container, probe and volume. */
const USER_DEPLOYMENT: Obj = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'my-agent', labels: { app: 'my-agent', team: 'kitchen' } },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'my-agent' } },
    template: {
      metadata: { labels: { app: 'my-agent', team: 'kitchen' } },
      spec: {
        initContainers: [{ name: 'migrate', image: 'my-agent:2.3.0', command: ['./migrate'] }],
        containers: [
          {
            name: 'agent',
            image: 'my-agent:2.3.0',
            env: [
              { name: 'PORT', value: '8000' },
              { name: 'MODEL', value: 'small' },
            ],
            ports: [{ name: 'http', containerPort: 8000 }],
            readinessProbe: { httpGet: { path: '/.well-known/agent-card.json', port: 'http' } },
            volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
          },
        ],
        volumes: [{ name: 'cache', emptyDir: {} }],
      },
    },
  },
};

/**
 * A minimal strategic merge for machines without kubectl: maps merge, lists of named objects merge by
 * name, and named objects new to a list go first (as kubectl's and Kustomize's merge put them).
 */
function strategicMerge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(base) && Array.isArray(patch) && [...base, ...patch].every((x) => typeof x === 'object' && x !== null && 'name' in x)) {
    const out = base.map((b) => structuredClone(b) as Obj);
    const added: Obj[] = [];
    for (const p of patch as Obj[]) {
      const i = out.findIndex((b) => b['name'] === p['name']);
      if (i >= 0) out[i] = strategicMerge(out[i], p) as Obj;
      else added.push(structuredClone(p));
    }
    return [...added, ...out];
  }
  if (typeof base === 'object' && base !== null && !Array.isArray(base) && typeof patch === 'object' && patch !== null && !Array.isArray(patch)) {
    const out: Obj = structuredClone(base as Obj);
    for (const [k, v] of Object.entries(patch)) out[k] = k in out ? strategicMerge(out[k], v) : structuredClone(v);
    return out;
  }
  return structuredClone(patch);
}

const hasKubectl = ((): boolean => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** The user's Deployment with the chart's patch applied: `kubectl kustomize` when there is a kubectl. */
function patched(patchYaml: string, name: string, base: Obj = USER_DEPLOYMENT): Obj {
  if (!hasKubectl) return strategicMerge(base, load(patchYaml)) as Obj;
  const overlay = join(dir, name);
  mkdirSync(overlay, { recursive: true });
  writeFileSync(join(overlay, 'deployment.yaml'), dump(base));
  writeFileSync(join(overlay, 'a2a-guard-patch.yaml'), patchYaml);
  writeFileSync(join(overlay, 'kustomization.yaml'), dump({ resources: ['deployment.yaml'], patches: [{ path: 'a2a-guard-patch.yaml' }] }));
  return load(execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' })) as Obj;
}

const render = (args: readonly string[]): Obj[] => parseManifests(helmTemplate(helm(), args));
const byKind = (objects: readonly Obj[], kind: string): Obj[] => objects.filter((d) => d['kind'] === kind);
const patchOf = (objects: readonly Obj[]): string =>
  String(((byKind(objects, 'ConfigMap').find((c) => nameOf(c) === 'my-agent-a2a-guard') as Obj)['data'] as Obj)['patch.yaml']);
const sidecarOf = (deployment: Obj): Obj => initContainersOf(deployment).find((c) => c['name'] === 'a2a-guard') as Obj;
/** The user's Secret the example names (guardianToken.existingSecret). */
const USER_SECRET: Obj = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'guardian-token' }, stringData: { token: 'a-long-guardian-token' } };

function configOf(sidecar: Obj, objects: readonly Obj[]): Config {
  const r = loadConfig(envOf(sidecar, [USER_SECRET, ...byKind(objects, 'Secret')], byKind(objects, 'ConfigMap')));
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
}

describe('the example values (role server, an external guardian, the token in a Secret of the user)', () => {
  let objects: Obj[];
  let result: Obj;
  beforeAll(() => {
    objects = render(['-f', EXAMPLE]);
    result = patched(patchOf(objects), 'server');
  }, 60_000);

  test("the chart renders only the sidecar's objects: the patch and variables ConfigMaps, the Service, the NetworkPolicy; no workload, no guardian", () => {
    expect(objects.map((d) => `${String(d['kind'])}/${nameOf(d)}`).sort()).toEqual([
      'ConfigMap/my-agent-a2a-guard',
      'ConfigMap/my-agent-a2a-guard-env',
      'NetworkPolicy/my-agent-a2a-guard',
      'Service/my-agent',
    ]);
    expect(schemaProblems(objects)).toEqual([]);
  });

  test("the agent's own containers, init container, volumes, labels and replicas are unchanged; a2a-guard is the one container added", () => {
    const before = USER_DEPLOYMENT;
    expect(containersOf(result)).toEqual(containersOf(before));
    // The sidecar goes first: it is up (startup probe passed) before the user's init containers run.
    expect(initContainersOf(result).map((c) => c['name'])).toEqual(['a2a-guard', 'migrate']);
    expect(initContainersOf(result)[1]).toEqual(initContainersOf(before)[0]);
    const { initContainers: _a, ...restAfter } = podSpec(result);
    const { initContainers: _b, ...restBefore } = podSpec(before);
    expect(restAfter).toEqual(restBefore);
    expect([(result['spec'] as Obj)['replicas'], (result['spec'] as Obj)['selector'], result['metadata']]).toEqual([
      3,
      { matchLabels: { app: 'my-agent' } },
      before['metadata'],
    ]);
  });

  test("the sidecar is a native sidecar whose configuration the program accepts: server role, the agent on loopback, the external guardian and the user's token", () => {
    const sidecar = sidecarOf(result);
    expect(sidecar['restartPolicy']).toBe('Always');
    const cfg = configOf(sidecar, objects);
    expect({
      role: cfg.role,
      upstream: cfg.upstreamUrl.href,
      guardian: cfg.guardianUrl?.href,
      token: cfg.guardianToken,
      failMode: cfg.failMode,
      publicUrl: cfg.publicUrl?.href,
      observed: cfg.observedAgent?.id,
    }).toEqual({
      role: 'server',
      upstream: 'http://127.0.0.1:8000/',
      guardian: 'https://guardian.example/aos',
      token: 'a-long-guardian-token',
      failMode: 'closed',
      publicUrl: 'http://my-agent.agents:8080/',
      observed: 'my-agent',
    });
    const ports = Object.fromEntries(((sidecar['ports'] as Obj[]) ?? []).map((p) => [p['name'], p['containerPort']]));
    expect(ports).toEqual({ a2a: cfg.port, admin: cfg.adminPort });
    expect(sidecar['startupProbe']).toMatchObject({ httpGet: { path: '/healthz', port: 'admin' } });
    expect(sidecar['readinessProbe']).toMatchObject({ httpGet: { path: '/readyz', port: 'admin' } });
    expect(sidecar['securityContext']).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(schemaProblems([result])).toEqual([]);
    expect(unknownFieldProblems([...objects, result].map((doc) => ({ tag: 'sidecar-only', doc })))).toEqual([]);
  }, 90_000);

  test("the Service selects the patched pods and leads to the sidecar's A2A port, never the agent's", () => {
    const svc = byKind(objects, 'Service')[0] as Obj;
    expect(selects(svc, result)).toBe(true);
    const ports = (svc['spec'] as Obj)['ports'] as Obj[];
    expect(ports.map((p) => [p['name'], p['port'], p['targetPort']])).toEqual([['a2a', 8080, 'a2a']]);
    const target = ((sidecarOf(result)['ports'] as Obj[]).find((p) => p['name'] === 'a2a') as Obj)['containerPort'];
    expect(target).toBe(configOf(sidecarOf(result), objects).port);
    expect(containersOf(result).flatMap((c) => ((c['ports'] as Obj[] | undefined) ?? []).map((p) => p['name']))).not.toContain('a2a');
  });

  test("the NetworkPolicy covers the patched pods and admits ingress on the sidecar's ports only (the agent listens on the pod IP)", () => {
    const np = byKind(objects, 'NetworkPolicy')[0] as Obj;
    const spec = np['spec'] as Obj;
    const labels = (((result['spec'] as Obj)['template'] as Obj)['metadata'] as Obj)['labels'] as Record<string, string>;
    expect(Object.entries((spec['podSelector'] as Obj)['matchLabels'] as Record<string, string>).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(spec['policyTypes']).toEqual(['Ingress']);
    const allowed = (spec['ingress'] as Obj[]).flatMap((rule) => (rule['ports'] as Obj[]).map((p) => p['port']));
    expect(allowed.sort()).toEqual(['a2a', 'admin']);
    const sidecarPorts = (sidecarOf(result)['ports'] as Obj[]).map((p) => p['name']);
    for (const port of allowed) expect(sidecarPorts).toContain(port);
  });
});

describe('variations', () => {
  const base = ['-f', EXAMPLE];

  test('role client: the sidecar listens on loopback for its own agent and calls the remote agent; no Service, no NetworkPolicy', () => {
    const objects = render([
      ...base,
      '--set',
      'workload.role=client',
      '--set',
      'workload.upstreamUrl=http://cake-baker.agents:8080',
      '--set',
      'workload.port=0',
    ]);
    expect(objects.map((d) => String(d['kind']))).toEqual(['ConfigMap', 'ConfigMap']);
    const cfg = configOf(sidecarOf(patched(patchOf(objects), 'client')), objects);
    expect([cfg.role, cfg.host, cfg.upstreamUrl.href]).toEqual(['client', '127.0.0.1', 'http://cake-baker.agents:8080/']);
  }, 60_000);

  test("the reference guardian and the chart's token: the sidecar asks that guardian with the token of the Secret the chart makes", () => {
    const objects = render([
      '--set',
      'mode=sidecar-only',
      '--set',
      'workload.name=my-agent',
      '--set',
      'workload.port=8000',
      '--set',
      'workload.selectorLabels.app=my-agent',
    ]);
    expect(objects.map((d) => `${String(d['kind'])}/${nameOf(d)}`).sort()).toEqual([
      'ConfigMap/a2a-guard-policy',
      'ConfigMap/my-agent-a2a-guard',
      'ConfigMap/my-agent-a2a-guard-env',
      'Deployment/a2a-guard-guardian',
      'NetworkPolicy/my-agent-a2a-guard',
      'PodDisruptionBudget/a2a-guard-guardian',
      'Secret/a2a-guard-guardian-token',
      'Service/a2a-guard-guardian',
      'Service/my-agent',
    ]);
    const cfg = configOf(sidecarOf(patched(patchOf(objects), 'reference-guardian')), objects);
    expect(cfg.guardianUrl?.href).toBe('http://a2a-guard-guardian:7070/');
    expect(cfg.guardianToken).toMatch(/^[A-Za-z0-9]{40}$/);
  }, 60_000);

  test('gRPC, sidecar settings and workload variables reach the patched sidecar; the Service and NetworkPolicy open the gRPC port', () => {
    const objects = render([
      ...base,
      '--set',
      'workload.grpcPort=9001',
      '--set',
      'sidecar.failMode=open',
      '--set',
      'workload.sidecarEnv.MAX_BODY_BYTES=2048',
      '--set',
      'networkPolicy.from[0].namespaceSelector.matchLabels.team=kitchen',
    ]);
    const cfg = configOf(sidecarOf(patched(patchOf(objects), 'grpc')), objects);
    expect([cfg.grpc?.port, cfg.grpc?.upstreamUrl?.href, cfg.failMode, cfg.maxBodyBytes]).toEqual([8081, 'http://127.0.0.1:9001/', 'open', 2048]);
    const svc = byKind(objects, 'Service')[0] as Obj;
    expect(((svc['spec'] as Obj)['ports'] as Obj[]).map((p) => p['targetPort'])).toEqual(['a2a', 'a2a-grpc']);
    const ingress = ((byKind(objects, 'NetworkPolicy')[0] as Obj)['spec'] as Obj)['ingress'] as Obj[];
    expect(ingress.map((r) => [(r['ports'] as Obj[]).map((p) => p['port']), r['from']])).toEqual([
      [['a2a', 'a2a-grpc'], [{ namespaceSelector: { matchLabels: { team: 'kitchen' } } }]],
      [['admin'], undefined],
    ]);
  }, 60_000);

  test('after an upgrade the patch applied again leaves no stale variable (a removed SHADOW_MODE is gone) and restarts the pods', () => {
    const first = render([...base, '--set', 'sidecar.env.SHADOW_MODE=true']);
    const once = patched(patchOf(first), 'upgrade-1');
    expect(configOf(sidecarOf(once), first).shadowMode).toBe(true);
    const second = render(base);
    const twice = patched(patchOf(second), 'upgrade-2', once);
    expect(configOf(sidecarOf(twice), second).shadowMode).toBe(false);
    expect(initContainersOf(twice).map((c) => c['name'])).toEqual(['a2a-guard', 'migrate']);
    const checksum = (d: Obj): unknown => ((((d['spec'] as Obj)['template'] as Obj)['metadata'] as Obj)['annotations'] as Obj)['a2a-guard/config-checksum'];
    expect(checksum(twice)).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum(twice)).not.toBe(checksum(once));
  }, 60_000);

  test('missing or contradictory values stop the render with a message that names them', () => {
    const fails = renderFailure;
    expect(fails([...base, '--set', 'workload.name='])).toMatch(/set workload\.name/);
    expect(fails([...base, '--set', 'workload.port=0'])).toMatch(/workload\.port is required for role server/);
    expect(fails([...base, '--set', 'workload.selectorLabels=null'])).toMatch(/workload\.selectorLabels is required/);
    expect(fails([...base, '--set', 'agents[0].name=other', '--set', 'agents[0].role=server', '--set', 'agents[0].image.repository=x'])).toMatch(
      /agents must be empty/,
    );
    expect(fails([...base, '--set', 'workload.role=client', '--set', 'workload.port=0'])).toMatch(/workload\.upstreamUrl is required for role client/);
    expect(fails([...base, '--set', 'workload.port=8080'])).toMatch(/workload\.port and workload\.grpcPort must differ from sidecar\.port \(8080\)/);
    expect(fails([...base, '--set', 'workload.grpcPort=9090'])).toMatch(/must differ from sidecar\.adminPort \(9090\)/);
  }, 60_000);
});

test('kubectl patch (the command the NOTES give), Kustomize and the fallback merge give the same Deployment (when kubectl is here)', () => {
  if (!hasKubectl) return;
  const patch = patchOf(render(['-f', EXAMPLE]));
  const viaKustomize = patched(patch, 'agree');
  writeFileSync(join(dir, 'agree', 'patch-file.yaml'), patch);
  const viaPatch = load(
    execFileSync(
      'kubectl',
      [
        'patch',
        '--local',
        '-f',
        join(dir, 'agree', 'deployment.yaml'),
        '--type',
        'strategic',
        '--patch-file',
        join(dir, 'agree', 'patch-file.yaml'),
        '-o',
        'yaml',
      ],
      { encoding: 'utf8' },
    ),
  );
  expect(viaPatch).toEqual(viaKustomize);
  expect(strategicMerge(USER_DEPLOYMENT, load(patch))).toEqual(viaKustomize);
}, 60_000);
