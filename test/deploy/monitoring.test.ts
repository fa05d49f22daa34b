/**
 * The chart's monitoring (off by default): a metrics Service and ServiceMonitor on the sidecars'
 * admin port, a PrometheusRule and a Grafana dashboard. Every PromQL expression names only metrics
 * the proxy exports (its own registry, read here, never a copied list) and only call outcomes it
 * counts; with promtool (Debian's prometheus package) the rendered rules pass `promtool check rules`
 * and each alert fires on the series it is about, and stays quiet on healthy ones (`promtool test rules`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { Metrics } from '../../src/admin/metrics';
import { CALL_OUTCOMES } from '../../src/observe/audit';
import { CHART, DEMO_ARGS, ROOT, helmTemplate } from '../../scripts/k8s-render';
import { parseManifests } from '../../scripts/k8s-podman';
import { type Obj, allContainersOf, helm, nameOf, podTemplate, schemaProblems, selects } from './manifests';

beforeAll(() => void helm(), 180_000);

const dir = mkdtempSync(join(tmpdir(), 'a2a-guard-monitoring-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ON = [
  '--set',
  'monitoring.serviceMonitor.enabled=true',
  '--set',
  'monitoring.prometheusRule.enabled=true',
  '--set',
  'monitoring.grafanaDashboard.enabled=true',
];
const render = (args: readonly string[]): Obj[] => parseManifests(helmTemplate(helm(), args));
const find = (objects: readonly Obj[], kind: string): Obj[] => objects.filter((d) => d['kind'] === kind);

/** Series names the proxy exports: its registry with process metrics, as main.ts starts it (histograms as _bucket/_sum/_count). */
async function exportedSeries(): Promise<Set<string>> {
  const metrics = new Metrics(true);
  const out = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    if (String(m.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) out.add(`${m.name}${suffix}`);
    else out.add(m.name);
  }
  metrics.registry.clear();
  return out;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

/** The metric names a PromQL expression selects, and the label matchers written on each. */
function promqlSelectors(expr: string): Array<{ metric: string; matchers: string }> {
  const out: Array<{ metric: string; matchers: string }> = [];
  // Strings first (they may hold anything), then ranges and grouping label lists.
  const strings: string[] = [];
  let text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, (s) => `"${strings.push(s) - 1}"`);
  text = text.replace(/\[[^\]]*\]/g, ' ').replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  // Selectors written as {__name__=...} with no metric name would escape the check: refuse them.
  let bare = false;
  text = text.replace(/(^|[^\w:\s])(\s*)\{[^}]*\}/g, (_, before: string) => {
    bare = true;
    return `${before} `;
  });
  const re = /(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const [, name, braces, call] = m;
    if (call !== undefined && braces === undefined) continue; // a function or aggregation
    if (KEYWORDS.has(name as string)) continue;
    const matchers = (braces ?? '').replace(/"(\d+)"/g, (_, i: string) => strings[Number(i)] as string);
    out.push({ metric: name as string, matchers });
  }
  if (bare) out.push({ metric: '{bare selector}', matchers: '' });
  return out;
}

/** Every PromQL expression of the rendered rules and dashboard, with where it is. */
function expressions(objects: readonly Obj[]): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  for (const rule of find(objects, 'PrometheusRule')) {
    for (const group of (rule['spec'] as Obj)['groups'] as Obj[]) {
      for (const r of group['rules'] as Obj[]) out.push({ where: `rule ${String(r['alert'] ?? r['record'])}`, expr: String(r['expr']) });
    }
  }
  for (const cm of find(objects, 'ConfigMap').filter((c) => nameOf(c).endsWith('-dashboard'))) {
    const dash = JSON.parse(String((cm['data'] as Obj)['a2a-guard.json'])) as Obj;
    for (const panel of dash['panels'] as Obj[]) {
      for (const t of (panel['targets'] as Obj[] | undefined) ?? []) out.push({ where: `panel ${String(panel['title'])}`, expr: String(t['expr']) });
    }
    for (const v of (dash['templating'] as Obj)['list'] as Obj[]) {
      const q = v['query'] as Obj | string;
      const query = typeof q === 'string' ? q : String(q['query']);
      const lv = /^label_values\((.*),\s*\w+\)$/.exec(query);
      if (v['type'] === 'query') out.push({ where: `variable ${String(v['name'])}`, expr: lv === null ? query : (lv[1] as string) });
    }
  }
  return out;
}

describe('objects', () => {
  test('off by default: no ServiceMonitor, PrometheusRule, dashboard or metrics Service', () => {
    const kinds = render(DEMO_ARGS).map((d) => `${String(d['kind'])}/${nameOf(d)}`);
    expect(kinds.filter((k) => /ServiceMonitor|PrometheusRule|dashboard|metrics/.test(k))).toEqual([]);
  });

  test("the metrics Service selects every pod with a sidecar (not the guardian) on the sidecar's admin port; the ServiceMonitor scrapes it", () => {
    const objects = render([...DEMO_ARGS, ...ON]);
    const svc = find(objects, 'Service').find((s) => nameOf(s) === 'a2a-guard-metrics') as Obj;
    const workloads = objects.filter((d) => podTemplate(d) !== undefined);
    const withSidecar = workloads
      .filter((w) => allContainersOf(w).some((c) => c['name'] === 'a2a-guard'))
      .map(nameOf)
      .sort();
    expect(
      workloads
        .filter((w) => selects(svc, w))
        .map(nameOf)
        .sort(),
    ).toEqual(withSidecar);
    expect(withSidecar).toEqual(['cake-baker', 'cooking-assistant']);
    expect((svc['spec'] as Obj)['clusterIP']).toBe('None');
    const port = ((svc['spec'] as Obj)['ports'] as Obj[])[0] as Obj;
    for (const w of workloads.filter((d) => withSidecar.includes(nameOf(d)))) {
      const sidecar = allContainersOf(w).find((c) => c['name'] === 'a2a-guard') as Obj;
      expect((sidecar['ports'] as Obj[]).find((p) => p['name'] === port['targetPort'])?.['containerPort']).toBe(port['port']);
    }
    const sm = find(objects, 'ServiceMonitor')[0] as Obj;
    const smSpec = sm['spec'] as Obj;
    const svcLabels = (svc['metadata'] as Obj)['labels'] as Record<string, string>;
    expect(Object.entries((smSpec['selector'] as Obj)['matchLabels'] as Record<string, string>).every(([k, v]) => svcLabels[k] === v)).toBe(true);
    expect(smSpec['endpoints']).toEqual([{ port: port['name'], path: '/metrics', interval: '30s', scrapeTimeout: '10s' }]);
    expect(sm['apiVersion']).toBe('monitoring.coreos.com/v1');
    expect(schemaProblems(objects.filter((d) => d['apiVersion'] !== 'monitoring.coreos.com/v1'))).toEqual([]);
  });

  test("sidecar-only: the metrics Service selects the workload's pods", () => {
    const objects = render(['-f', 'deploy/helm/sidecar-only-values.yaml', ...ON]);
    const svc = find(objects, 'Service').find((s) => nameOf(s) === 'a2a-guard-metrics') as Obj;
    expect((svc['spec'] as Obj)['selector']).toEqual({ app: 'my-agent' });
  });

  test('labels for the Prometheus and Grafana that pick them up; the alerts cover guardian, fail-open, denials, overload, the task store', () => {
    const objects = render([...ON, '--set', 'monitoring.serviceMonitor.labels.release=kps', '--set', 'monitoring.prometheusRule.labels.release=kps']);
    for (const kind of ['ServiceMonitor', 'PrometheusRule'])
      expect(((find(objects, kind)[0] as Obj)['metadata'] as Obj)['labels']).toMatchObject({ release: 'kps' });
    const dash = find(objects, 'ConfigMap').find((c) => nameOf(c) === 'a2a-guard-dashboard') as Obj;
    expect((dash['metadata'] as Obj)['labels']).toMatchObject({ grafana_dashboard: '1' });
    expect(JSON.parse(String((dash['data'] as Obj)['a2a-guard.json']))).toEqual(
      JSON.parse(readFileSync(join(ROOT, CHART, 'files/grafana-dashboard.json'), 'utf8')),
    );
    const alerts = expressions(objects)
      .filter((e) => e.where.startsWith('rule '))
      .map((e) => e.where.slice(5));
    expect(alerts).toEqual([
      'A2AGuardGuardianUnavailable',
      'A2AGuardCallsRefusedNoGuardian',
      'A2AGuardFailOpenPasses',
      'A2AGuardDenialSpike',
      'A2AGuardCallersLimited',
      'A2AGuardOverloaded',
      'A2AGuardTaskStoreDown',
      'A2AGuardNotReady',
    ]);
  });
});

describe('every query names what the proxy exports', () => {
  test('the selector reader finds metrics, skips functions, keywords and grouping labels, and refuses a bare selector', () => {
    expect(
      promqlSelectors('sum by (namespace, pod) (rate(a2a_guard_requests_total{outcome="denied", x=~"a{b}"}[5m])) / on (pod) group_left foo_bar > 0.25 and up'),
    ).toEqual([
      { metric: 'a2a_guard_requests_total', matchers: '{outcome="denied", x=~"a{b}"}' },
      { metric: 'foo_bar', matchers: '' },
      { metric: 'up', matchers: '' },
    ]);
    expect(promqlSelectors('{__name__="a2a_guard_ready"}').map((s) => s.metric)).toEqual(['{bare selector}']);
  });

  test('rules and dashboard: every metric is one the proxy exports; every outcome matcher on a2a_guard_requests_total names a call outcome', async () => {
    const exported = await exportedSeries();
    const objects = render(ON);
    const exprs = expressions(objects);
    expect(exprs.length).toBeGreaterThanOrEqual(20);
    const unknown: string[] = [];
    const outcomes: string[] = [];
    for (const { where, expr } of exprs) {
      const selectors = promqlSelectors(expr);
      if (selectors.length === 0) unknown.push(`${where}: no metric`);
      for (const { metric, matchers } of selectors) {
        if (!exported.has(metric)) unknown.push(`${where}: ${metric}`);
        if (metric !== 'a2a_guard_requests_total') continue;
        const m = /outcome\s*(=~?)\s*"([^"]*)"/.exec(matchers);
        if (m !== null) outcomes.push(...(m[1] === '=' ? [m[2] as string] : (m[2] as string).split('|')));
      }
    }
    expect(unknown).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(0);
    for (const o of outcomes) expect(CALL_OUTCOMES).toContain(o);
    // A control: a misspelt metric is caught.
    expect(promqlSelectors('rate(a2a_guard_request_total[5m])').filter((s) => !exported.has(s.metric))).toHaveLength(1);
  });
});

const promtool = ((): string | undefined => {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return 'promtool';
  } catch {
    return undefined;
  }
})();
const withPromtool = promtool === undefined ? test.skip : test;
if (promtool === undefined) console.warn('monitoring.test: promtool not found (Debian package prometheus): the promtool checks are skipped');

/**
 * The rendered PrometheusRule's groups as a Prometheus rule file; `annotationsOf` keeps the
 * annotations of those alerts only (promtool test rules compares them whole).
 */
function ruleFile(annotationsOf?: readonly string[]): string {
  const rule = find(render(ON), 'PrometheusRule')[0] as Obj;
  const groups = JSON.parse(JSON.stringify((rule['spec'] as Obj)['groups'])) as Obj[];
  if (annotationsOf !== undefined) {
    for (const g of groups) for (const r of g['rules'] as Obj[]) if (!annotationsOf.includes(String(r['alert']))) delete r['annotations'];
  }
  const file = join(dir, annotationsOf === undefined ? 'a2a-guard.rules.yaml' : 'a2a-guard.rules.for-tests.yaml');
  writeFileSync(file, dump({ groups }));
  return file;
}

describe('promtool', () => {
  withPromtool('promtool check rules passes on the rendered rule file', () => {
    const out = execFileSync(promtool as string, ['check', 'rules', ruleFile()], { encoding: 'utf8' });
    expect(out).toMatch(/SUCCESS: 8 rules found/);
  });

  withPromtool('promtool test rules: each alert fires on the series it is about and not on healthy ones', () => {
    const rules = ruleFile(['A2AGuardFailOpenPasses']);
    const pod = (labels: string): string => `{namespace="agents", pod="baker-1"${labels}}`;
    const at = (alertname: string, minutes: number, labels: Record<string, string>[] = []): Obj => ({
      eval_time: `${minutes}m`,
      alertname,
      exp_alerts: labels.map((l) => ({ exp_labels: l })),
    });
    const podAlert = (severity = 'warning', extra: Record<string, string> = {}): Record<string, string> => ({
      namespace: 'agents',
      pod: 'baker-1',
      severity,
      ...extra,
    });
    const tests = [
      {
        // the guardian down: ping failing, calls refused; fail-open passes elsewhere
        interval: '1m',
        input_series: [
          { series: `a2a_guard_guardian_up${pod('')}`, values: '0x15' },
          { series: `a2a_guard_guardian_breaker_state${pod(', state="open"')}`, values: '1x15' },
          { series: `a2a_guard_requests_total${pod(', operation="SendMessage", outcome="guardian_unavailable"')}`, values: '0+30x15' },
          { series: 'a2a_guard_fail_open_passes_total{namespace="agents", pod="assistant-1"}', values: '0 0 0 5 10 10 10 10 10 10 10 10 10 10 10 10' },
        ],
        alert_rule_test: [
          at('A2AGuardGuardianUnavailable', 1),
          at('A2AGuardGuardianUnavailable', 5, [podAlert()]),
          at('A2AGuardCallsRefusedNoGuardian', 10, [podAlert()]),
          at('A2AGuardFailOpenPasses', 1),
          {
            eval_time: '4m',
            alertname: 'A2AGuardFailOpenPasses',
            exp_alerts: [
              {
                exp_labels: { namespace: 'agents', pod: 'assistant-1', severity: 'critical' },
                exp_annotations: {
                  summary: 'A2A traffic passed without a guardian decision in agents/assistant-1',
                  description: '10 requests or events passed unchecked in 5 minutes (FAIL_MODE=open while the guardian did not answer).',
                },
              },
            ],
          },
          at('A2AGuardFailOpenPasses', 15),
        ],
      },
      {
        // a denial spike in one namespace, a quiet one in another
        interval: '1m',
        input_series: [
          { series: 'a2a_guard_requests_total{namespace="agents", pod="baker-1", operation="SendMessage", outcome="denied"}', values: '0+60x30' },
          { series: 'a2a_guard_requests_total{namespace="agents", pod="baker-1", operation="SendMessage", outcome="forwarded"}', values: '0+60x30' },
          { series: 'a2a_guard_requests_total{namespace="quiet", pod="q-1", operation="SendMessage", outcome="denied"}', values: '0+1x30' },
          { series: 'a2a_guard_requests_total{namespace="quiet", pod="q-1", operation="SendMessage", outcome="forwarded"}', values: '0+600x30' },
        ],
        alert_rule_test: [at('A2AGuardDenialSpike', 20, [{ namespace: 'agents', severity: 'warning' }])],
      },
      {
        // overload: one caller held to its share, calls queued for the guardian; the task store down; not ready unless draining
        interval: '1m',
        input_series: [
          { series: `a2a_guard_caller_limited_total${pod(', resource="calls"')}`, values: '0+10x20' },
          { series: `a2a_guard_guardian_queued_calls${pod(', budget="call"')}`, values: '3x10' },
          { series: `a2a_guard_task_ownership_total${pod(', operation="GetTask", outcome="store_unavailable_refused"')}`, values: '0+5x10' },
          { series: `a2a_guard_task_ownership_total${pod(', operation="GetTask", outcome="owned"')}`, values: '0+50x10' },
          { series: `a2a_guard_ready${pod('')}`, values: '0x10' },
          { series: `a2a_guard_draining${pod('')}`, values: '0x10' },
          { series: 'a2a_guard_ready{namespace="agents", pod="baker-2"}', values: '0x10' },
          { series: 'a2a_guard_draining{namespace="agents", pod="baker-2"}', values: '1x10' },
        ],
        alert_rule_test: [
          at('A2AGuardCallersLimited', 15, [podAlert('warning', { resource: 'calls' })]),
          at('A2AGuardOverloaded', 7, [podAlert()]),
          at('A2AGuardTaskStoreDown', 5, [podAlert()]),
          at('A2AGuardNotReady', 7, [podAlert()]),
        ],
      },
    ];
    const file = join(dir, 'a2a-guard.rules.test.yaml');
    writeFileSync(file, dump({ rule_files: [rules], evaluation_interval: '1m', tests }, { skipInvalid: true }));
    let out: string;
    try {
      out = execFileSync(promtool as string, ['test', 'rules', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stdout?: unknown; stderr?: unknown };
      throw new Error(`promtool test rules failed:\n${String(e.stdout)}${String(e.stderr)}`);
    }
    expect(out).toMatch(/SUCCESS/);
  });
});
