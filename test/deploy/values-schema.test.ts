/**
 * The chart's values.schema.json: a misspelt key or a value of the wrong type stops `helm lint`,
 * `helm template` (and so install and upgrade) with a message naming it, instead of being ignored
 * and deploying the defaults; the shipped values and the demo values pass.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { CHART, DEMO_ARGS, DEMO_VALUES, ROOT, helmTemplate } from '../../scripts/k8s-render';
import { failureOf, helm } from './manifests';

beforeAll(() => void helm(), 180_000);

const dir = mkdtempSync(join(tmpdir(), 'a2a-guard-values-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A values file as a user would write it. */
function valuesFile(name: string, values: unknown): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, dump(values));
  return file;
}

const failure = (args: readonly string[], run: (args: readonly string[]) => string): string => failureOf(() => run(args));
const lint = (args: readonly string[]): string =>
  execFileSync(helm(), ['lint', CHART, ...args], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const template = (args: readonly string[]): string => helmTemplate(helm(), args);

const demo = (): Record<string, unknown> => load(readFileSync(join(ROOT, DEMO_VALUES), 'utf8')) as Record<string, unknown>;

test('the schema is draft-07 and closes every object of the values, but Kubernetes structures passed through', () => {
  const schema = JSON.parse(readFileSync(join(ROOT, CHART, 'values.schema.json'), 'utf8')) as Record<string, unknown>;
  expect(schema['$schema']).toBe('http://json-schema.org/draft-07/schema#');
  const open: string[] = [];
  const walk = (node: Record<string, unknown>, path: string): void => {
    if (node['type'] === 'object' && node['additionalProperties'] === undefined && node['properties'] === undefined) open.push(path);
    for (const [k, v] of Object.entries((node['properties'] as Record<string, Record<string, unknown>> | undefined) ?? {})) walk(v, `${path}.${k}`);
    const items = node['items'] as Record<string, unknown> | undefined;
    if (items !== undefined) walk(items, `${path}[]`);
  };
  walk(schema, '');
  // Only what Kubernetes itself defines (and validates) is left open.
  expect(open.sort()).toEqual([
    '.agents[].affinity',
    '.agents[].resources.limits',
    '.agents[].resources.requests',
    '.agents[].securityContext',
    '.global',
    '.guardian.affinity',
    '.guardian.resources.limits',
    '.guardian.resources.requests',
    '.networkPolicy.adminFrom[]',
    '.networkPolicy.from[]',
    '.podSecurityContext',
    '.securityContext',
    '.sidecar.resources.limits',
    '.sidecar.resources.requests',
  ]);
});

test('the shipped values and the demo values pass helm lint and helm template', () => {
  for (const args of [[], DEMO_ARGS]) {
    expect(lint(args)).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(template(args)).toMatch(/^kind: /m);
  }
});

describe('a typo or a wrong type fails helm lint and helm template, naming the value', () => {
  const cases: Array<{ what: string; values: Record<string, unknown>; message: RegExp }> = [
    {
      what: 'guardianURL for guardianUrl',
      values: { guardianURL: 'https://guardian.example/aos' },
      message: /at '': additional properties 'guardianURL' not allowed/,
    },
    {
      what: 'sidecar.failmode for sidecar.failMode',
      values: { sidecar: { failmode: 'open' } },
      message: /at '\/sidecar': additional properties 'failmode' not allowed/,
    },
    { what: 'a string where a port number goes', values: { sidecar: { port: '8080' } }, message: /at '\/sidecar\/port': got string, want integer/ },
    {
      what: 'a string where a timeout goes',
      values: { sidecar: { guardianTimeoutMs: '5s' } },
      message: /at '\/sidecar\/guardianTimeoutMs': got string, want integer/,
    },
    {
      what: 'a fail mode that does not exist',
      values: { sidecar: { failMode: 'opne' } },
      message: /at '\/sidecar\/failMode': value must be one of 'closed', 'open'/,
    },
    {
      what: 'a misspelt key of an agent',
      values: { agents: [{ ...((demo()['agents'] as unknown[])[0] as object), prot: 8000 }] },
      message: /at '\/agents\/0': additional properties 'prot' not allowed/,
    },
    {
      what: 'a sidecar variable given with its prefix',
      values: { sidecar: { env: { A2A_GUARD_MAX_BODY_BYTES: '1024' } } },
      message: /invalid propertyName 'A2A_GUARD_MAX_BODY_BYTES'/,
    },
    {
      what: 'a misspelt monitoring switch',
      values: { monitoring: { serviceMonitor: { enable: true } } },
      message: /at '\/monitoring\/serviceMonitor': additional properties 'enable' not allowed/,
    },
    { what: 'a mode that does not exist', values: { mode: 'sidecar' }, message: /at '\/mode': value must be one of 'agents', 'sidecar-only'/ },
  ];
  test.each(cases)('$what', ({ what, values, message }) => {
    const args = ['-f', valuesFile(what.replace(/\W+/g, '-'), values)];
    const fromLint = failure(args, lint);
    expect(fromLint).toMatch(/1 chart\(s\) failed/);
    expect(fromLint).toMatch(message);
    expect(failure(args, template)).toMatch(message);
  });

  test('--set on the command line is checked too', () => {
    expect(failure(['--set', 'guardianURL=https://guardian.example/aos'], template)).toMatch(/additional properties 'guardianURL' not allowed/);
    expect(failure(['--set-string', 'sidecar.adminPort=9090'], template)).toMatch(/at '\/sidecar\/adminPort': got string, want integer/);
  });
});
