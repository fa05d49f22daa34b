/**
 * Helpers for checking Kubernetes manifests without a cluster:
 * - `schemaProblems`: the Kubernetes API schemas (kubernetes-models' validators: types, required fields);
 * - `unknownFieldProblems`: fields the API does not know (what `kubectl --validate=strict` refuses), found
 *   by type-checking the objects as TypeScript literals against kubernetes-models' API types
 *   (TypeScript's excess-property check), since the JSON-schema validators accept any extra field;
 * - small accessors for pods, containers and environment variables.
 */
import { join } from 'node:path';
import * as ts from 'typescript';
import { helmBinary, helmTemplate } from '../../scripts/k8s-render';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';

export type Obj = Record<string, unknown>;

const ROOT = join(__dirname, '..', '..');

interface Kind {
  readonly validate: (doc: Obj) => void;
  /** Module and interface of the API type, for the strict check. */
  readonly module: string;
  readonly type: string;
}

const KINDS: Record<string, Kind> = {
  'v1/Secret': { validate: (d) => new Secret(d as never).validate(), module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'v1/ConfigMap': { validate: (d) => new ConfigMap(d as never).validate(), module: 'kubernetes-models/v1/ConfigMap', type: 'IConfigMap' },
  'v1/Service': { validate: (d) => new Service(d as never).validate(), module: 'kubernetes-models/v1/Service', type: 'IService' },
  'apps/v1/Deployment': { validate: (d) => new Deployment(d as never).validate(), module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' },
  'batch/v1/Job': { validate: (d) => new Job(d as never).validate(), module: 'kubernetes-models/batch/v1/Job', type: 'IJob' },
  'policy/v1/PodDisruptionBudget': {
    validate: (d) => new PodDisruptionBudget(d as never).validate(),
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    type: 'IPodDisruptionBudget',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    validate: (d) => new NetworkPolicy(d as never).validate(),
    module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
    type: 'INetworkPolicy',
  },
};

const kindOf = (doc: Obj): string => `${String(doc['apiVersion'])}/${String(doc['kind'])}`;
export const nameOf = (doc: Obj): string => String((doc['metadata'] as Obj | undefined)?.['name']);

/** One line per object that fails its API schema (or has a kind these checks do not know). */
export function schemaProblems(docs: readonly Obj[]): string[] {
  const problems: string[] = [];
  for (const doc of docs) {
    const kind = KINDS[kindOf(doc)];
    if (kind === undefined) {
      problems.push(`${kindOf(doc)} ${nameOf(doc)}: kind not known to the checks`);
      continue;
    }
    try {
      kind.validate(doc);
    } catch (err) {
      problems.push(`${kindOf(doc)} ${nameOf(doc)}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * One line per field the Kubernetes API types do not have (or of the wrong type), each starting
 * with the tag of its object. One TypeScript program for all objects (it is the slow part).
 */
export function unknownFieldProblems(objects: ReadonlyArray<{ readonly tag: string; readonly doc: Obj }>): string[] {
  const file = join(ROOT, 'test', 'deploy', '__manifests__.ts');
  const lines: string[] = [];
  const imports = new Map<string, string>();
  const tags: string[] = [];
  for (const { tag, doc } of objects) {
    const kind = KINDS[kindOf(doc)];
    if (kind === undefined) continue;
    imports.set(kind.type, kind.module);
    tags.push(`${tag} ${kindOf(doc)} ${nameOf(doc)}`);
    lines.push(`export const doc${tags.length - 1}: ${kind.type} = ${JSON.stringify(doc)};`);
  }
  const header = [...imports].map(([type, m]) => `import type { ${type} } from '${m}';`);
  const source = [...header, ...lines].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    target: ts.ScriptTarget.ES2022,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file?.fileName === file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line - header.length : -1;
    const where = line >= 0 ? (tags[line] ?? '?') : (d.file?.fileName ?? '?');
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

/** The pod template of a workload (Deployment or Job), or undefined. */
export function podTemplate(doc: Obj): Obj | undefined {
  if (doc['kind'] !== 'Deployment' && doc['kind'] !== 'Job') return undefined;
  return (doc['spec'] as Obj)['template'] as Obj;
}

export const podSpec = (doc: Obj): Obj => (podTemplate(doc) as Obj)['spec'] as Obj;
export const containersOf = (doc: Obj): Obj[] => (podSpec(doc)['containers'] as Obj[] | undefined) ?? [];
export const initContainersOf = (doc: Obj): Obj[] => (podSpec(doc)['initContainers'] as Obj[] | undefined) ?? [];
export const allContainersOf = (doc: Obj): Obj[] => [...initContainersOf(doc), ...containersOf(doc)];

/**
 * A container's environment with Secret references resolved from the given Secrets and envFrom
 * ConfigMaps from the given ConfigMaps (env wins over envFrom, as in Kubernetes).
 */
export function envOf(container: Obj, secrets: readonly Obj[], configMaps: readonly Obj[] = []): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of (container['envFrom'] as Obj[] | undefined) ?? []) {
    const ref = from['configMapRef'] as Obj | undefined;
    if (ref === undefined) throw new Error('envFrom: only configMapRef is used');
    const cm = configMaps.find((c) => nameOf(c) === ref['name']);
    if (cm === undefined) throw new Error(`envFrom: ConfigMap ${String(ref['name'])} does not exist`);
    Object.assign(env, (cm['data'] as Record<string, string> | undefined) ?? {});
  }
  for (const e of (container['env'] as Obj[] | undefined) ?? []) {
    const name = String(e['name']);
    if (typeof e['value'] === 'string') {
      env[name] = e['value'];
      continue;
    }
    const ref = (e['valueFrom'] as Obj | undefined)?.['secretKeyRef'] as Obj | undefined;
    if (ref === undefined) throw new Error(`${name}: only value and secretKeyRef are used`);
    const secret = secrets.find((s) => nameOf(s) === ref['name']);
    if (secret === undefined) throw new Error(`${name}: Secret ${String(ref['name'])} does not exist`);
    const key = String(ref['key']);
    const text =
      (secret['stringData'] as Obj | undefined)?.[key] ?? Buffer.from(String((secret['data'] as Obj | undefined)?.[key] ?? ''), 'base64').toString('utf8');
    if (typeof text !== 'string' || text === '') throw new Error(`${name}: Secret ${String(ref['name'])} has no key ${key}`);
    env[name] = text;
  }
  return env;
}

/** Does a Service's selector select this workload's pods? */
export function selects(service: Obj, workload: Obj): boolean {
  const selector = ((service['spec'] as Obj)['selector'] as Record<string, string> | undefined) ?? {};
  const labels = (((podTemplate(workload) ?? {})['metadata'] as Obj | undefined)?.['labels'] as Record<string, string> | undefined) ?? {};
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

let helmPath: string | undefined;
/** The pinned helm (installed once by scripts/install-helm.sh from an npm package). */
export const helm = (): string => (helmPath ??= helmBinary());

/** What a command that must fail printed (stdout, then stderr), or '' when it did not fail. */
export function failureOf(run: () => unknown): string {
  try {
    run();
    return '';
  } catch (err) {
    const e = err as { stderr?: unknown; stdout?: unknown };
    return `${String(e.stdout ?? '')}${String(e.stderr ?? err)}`;
  }
}

/** What `helm template` printed when it refused these arguments, or '' when it rendered them. */
export const renderFailure = (args: readonly string[]): string => failureOf(() => helmTemplate(helm(), args));
