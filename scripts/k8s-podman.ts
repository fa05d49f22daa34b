/**
 * Turn the Kubernetes manifests of deploy/kubernetes/ into what `podman kube play` (podman 4.3)
 * can run, and say what was changed. Used by scripts/k8s-play.sh; pure except for the CLI at the
 * bottom. What podman 4.3 cannot do, and what is done instead:
 *
 * - Native sidecars: podman runs an init container with restartPolicy: Always once, before the
 *   other containers, and fails (it never exits). They become ordinary containers of the pod.
 * - Deployments and Jobs: kube play makes one pod per Deployment, named "<name>-pod", and knows
 *   no Jobs; Services are ignored. Each workload becomes one bare Pod named after the Service that
 *   selects it, so the Service's name resolves (podman's DNS knows pod names); a Service port must
 *   then equal the container port it targets.
 * - Probes need systemd timers in podman (none here) and the preStop `sleep` action is unknown to
 *   podman 4.3: both are removed. Secrets become podman secrets in the JSON form kube play reads.
 *   Annotation values longer than 63 characters (a checksum) are refused by podman 4.3: dropped.
 *   Container ports are dropped too: podman 4.3 publishes every declared port on the host.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, loadAll } from 'js-yaml';

type Obj = Record<string, unknown>;

export interface PodmanPlan {
  /** The YAML for `podman kube play`: ConfigMaps and Pods. */
  readonly kubeYaml: string;
  /** `podman secret create NAME FILE` for each: FILE holds {key: base64 value}. */
  readonly secrets: ReadonlyArray<{ readonly name: string; readonly data: Record<string, string> }>;
  /** The pods, and for each the containers that must exit (run-once workloads such as Jobs). */
  readonly pods: ReadonlyArray<{ readonly name: string; readonly runOnce: readonly string[] }>;
  /** What differs from the manifests, one line each. */
  readonly notes: readonly string[];
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown, what: string): Obj => {
  if (!isObj(v)) throw new Error(`${what}: expected an object`);
  return v;
};
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export function parseManifests(text: string): Obj[] {
  return loadAll(text).filter(isObj);
}

export function toPodman(docs: readonly Obj[]): PodmanPlan {
  const notes = new Set<string>();
  const services = docs.filter((d) => d['kind'] === 'Service');
  const secrets: Array<{ name: string; data: Record<string, string> }> = [];
  const configMaps: Obj[] = [];
  const pods: Obj[] = [];
  const runOnce: Array<{ name: string; runOnce: string[] }> = [];

  for (const doc of docs) {
    const kind = str(doc['kind']);
    const meta = obj(doc['metadata'], `${kind} metadata`);
    const name = str(meta['name']);
    switch (kind) {
      case 'Secret':
        secrets.push({ name, data: secretData(doc) });
        notes.add('Secrets become podman secrets (podman 4.3 kube play reads a secret as JSON {key: base64}).');
        break;
      case 'ConfigMap':
        configMaps.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: doc['data'] });
        break;
      case 'Service':
        notes.add(
          "Services are not made (podman 4.3 ignores them): each Pod is named after the Service that selects it, so the name resolves in podman's DNS; no load balancing.",
        );
        break;
      case 'PodDisruptionBudget':
        notes.add('PodDisruptionBudgets are dropped (nothing evicts pods here).');
        break;
      case 'Deployment':
      case 'Job': {
        const spec = obj(doc['spec'], `${kind} ${name} spec`);
        const template = obj(spec['template'], `${kind} ${name} template`);
        const podName = serviceNameFor(services, template) ?? name;
        const replicas = typeof spec['replicas'] === 'number' ? spec['replicas'] : 1;
        if (kind === 'Deployment') {
          notes.add('Deployments become one bare Pod each (one replica, no ReplicaSet).');
          if (replicas > 1) notes.add(`${name}: ${replicas} replicas in the manifest, 1 pod here.`);
        } else {
          notes.add("Jobs become a Pod with restartPolicy: Never; the run waits for the Job's own containers to exit.");
        }
        const pod = podFrom(podName, template, notes);
        checkServicePorts(services, podName, template);
        pods.push(pod);
        const podSpec = obj(template['spec'], `${name} pod spec`);
        runOnce.push({ name: podName, runOnce: kind === 'Job' ? list(podSpec['containers']).map((c) => str(c['name'])) : [] });
        break;
      }
      default:
        throw new Error(`no podman equivalent for kind ${kind} (${name})`);
    }
  }
  const kubeYaml = [...configMaps, ...pods].map((d) => dump(d, { lineWidth: -1, noRefs: true })).join('---\n');
  return { kubeYaml, secrets, pods: runOnce, notes: [...notes] };
}

function secretData(doc: Obj): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(isObj(doc['data']) ? doc['data'] : {})) out[k] = str(v);
  for (const [k, v] of Object.entries(isObj(doc['stringData']) ? doc['stringData'] : {})) out[k] = Buffer.from(str(v), 'utf8').toString('base64');
  return out;
}

/** The Service whose selector matches the pod template's labels. */
function serviceNameFor(services: readonly Obj[], template: Obj): string | undefined {
  const labels = isObj(obj(template['metadata'], 'template metadata')['labels']) ? (obj(template['metadata'], 'm')['labels'] as Obj) : {};
  const matching = services.filter((s) => {
    const selector = obj(obj(s['spec'], 'Service spec')['selector'], 'Service selector');
    return Object.entries(selector).every(([k, v]) => labels[k] === v);
  });
  if (matching.length > 1)
    throw new Error(`more than one Service selects the same pods: ${matching.map((s) => str(obj(s['metadata'], 'm')['name'])).join(', ')}`);
  return matching[0] === undefined ? undefined : str(obj(matching[0]['metadata'], 'Service metadata')['name']);
}

/** Without kube-proxy a Service port must be the port the container listens on. */
function checkServicePorts(services: readonly Obj[], podName: string, template: Obj): void {
  const service = services.find((s) => str(obj(s['metadata'], 'm')['name']) === podName);
  if (service === undefined) return;
  const spec = obj(template['spec'], 'pod spec');
  const containerPorts = [...list(spec['initContainers']), ...list(spec['containers'])].flatMap((c) => list(c['ports']));
  for (const p of list(obj(service['spec'], 'Service spec')['ports'])) {
    const target = p['targetPort'] ?? p['port'];
    const port = typeof target === 'number' ? target : containerPorts.find((c) => c['name'] === target)?.['containerPort'];
    if (port !== p['port'])
      throw new Error(`Service ${podName}: port ${String(p['port'])} targets ${String(target)} (${String(port)}); podman needs them equal`);
  }
}

function podFrom(name: string, template: Obj, notes: Set<string>): Obj {
  const meta = obj(template['metadata'], 'template metadata');
  const spec = { ...obj(template['spec'], 'pod spec') };
  const sidecars = list(spec['initContainers']).filter((c) => c['restartPolicy'] === 'Always');
  const inits = list(spec['initContainers']).filter((c) => c['restartPolicy'] !== 'Always');
  if (sidecars.length > 0) {
    notes.add(
      'Native sidecars (initContainers with restartPolicy: Always) become ordinary containers, listed first: podman 4.3 runs an init container once and fails on one that keeps running. podman starts all containers of a pod together, so the agent does not wait for its sidecar (the demo client waits for /readyz itself).',
    );
  }
  const containers = [...sidecars.map(({ restartPolicy: _drop, ...c }) => c), ...list(spec['containers'])].map((c) => podmanContainer(c, notes));
  delete spec['initContainers'];
  if (inits.length > 0) spec['initContainers'] = inits.map((c) => podmanContainer(c, notes));
  spec['containers'] = containers;
  const annotations = podmanAnnotations(meta['annotations'], notes);
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: meta['labels'] ?? {}, ...(annotations === undefined ? {} : { annotations }) }, spec };
}

/** podman 4.3 holds annotation values to the 63-character label limit (Kubernetes has none for them). */
function podmanAnnotations(annotations: unknown, notes: Set<string>): Obj | undefined {
  if (!isObj(annotations)) return undefined;
  const kept: Obj = {};
  for (const [k, v] of Object.entries(annotations)) {
    if (str(v).length > 63) notes.add(`Pod annotation ${k} is dropped: podman 4.3 refuses annotation values over 63 characters.`);
    else kept[k] = v;
  }
  return Object.keys(kept).length === 0 ? undefined : kept;
}

function podmanContainer(container: Obj, notes: Set<string>): Obj {
  const out = { ...container };
  if (out['ports'] !== undefined) {
    delete out['ports'];
    notes.add(
      'Container ports are not declared: podman 4.3 kube play publishes each one on the host (two pods with an admin port 9090 collide); pods reach each other over the podman network.',
    );
  }
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    if (out[probe] !== undefined) {
      delete out[probe];
      notes.add('Probes are removed: podman runs them as health checks through systemd timers, and there is no systemd here.');
    }
  }
  if (out['lifecycle'] !== undefined) {
    delete out['lifecycle'];
    notes.add('preStop hooks are removed (podman 4.3 does not know the sleep action); the grace period stays.');
  }
  return out;
}

/** CLI: k8s-podman.js MANIFEST_DIR OUT_DIR -> OUT_DIR/play.yaml, OUT_DIR/secrets/NAME.json, OUT_DIR/plan.json; notes on stdout. */
function main(argv: readonly string[]): number {
  const [dir, out] = argv;
  if (dir === undefined || out === undefined) {
    process.stderr.write('usage: node dist/scripts/k8s-podman.js MANIFEST_DIR OUT_DIR\n');
    return 2;
  }
  const docs = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => parseManifests(readFileSync(join(dir, f), 'utf8')));
  const plan = toPodman(docs);
  mkdirSync(join(out, 'secrets'), { recursive: true });
  writeFileSync(join(out, 'play.yaml'), plan.kubeYaml);
  for (const s of plan.secrets) writeFileSync(join(out, 'secrets', `${s.name}.json`), JSON.stringify(s.data), { mode: 0o600 });
  writeFileSync(join(out, 'plan.json'), JSON.stringify({ pods: plan.pods, secrets: plan.secrets.map((s) => s.name) }, null, 2));
  for (const n of plan.notes) process.stdout.write(`- ${n}\n`);
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
