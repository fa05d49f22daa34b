/**
 * The direction of imports in src/ (README "Simple and legible"; architecture.md "Layers"): protocol
 * knowledge never imports plumbing, the reference guardian never imports the proxy, nothing imports
 * the demo, and modules import each other in one direction only. Reads every import with the
 * TypeScript parser: static `import`/`export ... from` (type-only ones too: a type in the wrong home
 * is the same wrong direction) and lazy `require()`/`import()`.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../../src');

interface Edge {
  readonly from: string;
  readonly to: string;
  /** A `require()` or `import()` inside a function: loaded on use, so it cannot form a load-time cycle. */
  readonly lazy: boolean;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Relative specifier -> file below src/ ('proxy/http/pipeline.ts'), or undefined for packages and node: modules. */
function resolve(fromFile: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(fromFile), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts'), base]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return path.relative(SRC, candidate).split(path.sep).join('/');
  }
  throw new Error(`${path.relative(SRC, fromFile)} imports ${spec}, which does not resolve`);
}

/** Every import of one file; exported for the checker's own test below. */
export function importsOf(file: string, text: string): Edge[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const from = path.relative(SRC, file).split(path.sep).join('/');
  const edges: Edge[] = [];
  const add = (spec: string, lazy: boolean) => {
    const to = resolve(file, spec);
    if (to !== undefined) edges.push({ from, to, lazy });
  };
  const visit = (node: ts.Node, depth: number): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      // `typeof import('./x')`: a type reference; inside a function it types a lazy require of the same file.
      add(node.argument.literal.text, depth > 0);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0] as ts.Expression)) {
      const callee = node.expression;
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require';
      if (isRequire || callee.kind === ts.SyntaxKind.ImportKeyword) add((node.arguments[0] as ts.StringLiteral).text, depth > 0);
    }
    const inner = ts.isFunctionLike(node) ? depth + 1 : depth;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(sf, 0);
  return edges;
}

/** The module a file belongs to: its top directory below src/, or the file itself at the root. */
export function moduleOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? file : file.slice(0, slash);
}

/**
 * Allowed imports between modules. A module not named here may import anything that does not form a
 * cycle; the named ones are the layers whose direction is the design.
 */
const RULES: readonly { readonly module: string; readonly mayNotImport: readonly string[]; readonly why: string }[] = [
  { module: 'core', mayNotImport: ['*'], why: 'core/ is the bottom layer: json types, the error table' },
  { module: 'a2a', mayNotImport: ['*', '!core'], why: 'protocol knowledge (a2a/) imports only core/' },
  {
    module: 'aos',
    mayNotImport: ['proxy', 'guardian', 'ownership', 'observe', 'admin', 'identity'],
    why: 'aos/ is protocol knowledge: it never imports plumbing',
  },
  {
    module: 'guardian',
    mayNotImport: ['proxy', 'ownership', 'admin', 'server.ts', 'main.ts', 'cli', 'config'],
    why: 'the reference guardian never imports the proxy, its configuration or its command line',
  },
];

/** The proxy's inbound adapters: each frames its transport over the shared middle (the files at the root of proxy/). */
const ADAPTERS = ['proxy/http/', 'proxy/grpc/'] as const;

function adapterOf(file: string): string | undefined {
  return ADAPTERS.find((a) => file.startsWith(a));
}

/** An adapter never imports another adapter; the middle (proxy/*.ts) imports no adapter. */
export function adapterViolations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    if (!e.from.startsWith('proxy/')) continue;
    const from = adapterOf(e.from);
    const to = adapterOf(e.to);
    if (to === undefined || from === to) continue;
    if (from !== undefined) out.push(`${e.from} imports ${e.to}: one adapter never imports another (shared pieces live in proxy/*.ts)`);
    else if (!e.from.slice('proxy/'.length).includes('/')) out.push(`${e.from} imports ${e.to}: the middle (proxy/*.ts) imports no adapter`);
  }
  return out;
}

export function violations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const a = moduleOf(e.from);
    const b = moduleOf(e.to);
    if (a === b) continue;
    if (b === 'demo') out.push(`${e.from} imports ${e.to}: nothing imports the demo`);
    for (const r of RULES) {
      if (r.module !== a) continue;
      const all = r.mayNotImport.includes('*');
      const banned = all ? !r.mayNotImport.includes(`!${b}`) : r.mayNotImport.includes(b);
      if (banned) out.push(`${e.from} imports ${e.to}: ${r.why}`);
    }
  }
  return out;
}

/** Cycles (Tarjan's strongly connected components) of a graph given as node -> successors. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return found;
}

function graphOf(edges: readonly Edge[], node: (file: string) => string): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const e of edges) {
    if (e.lazy) continue;
    const a = node(e.from);
    const b = node(e.to);
    if (a === b) continue;
    const succ = g.get(a) ?? [];
    if (!succ.includes(b)) succ.push(b);
    g.set(a, succ);
    if (!g.has(b)) g.set(b, []);
  }
  return g;
}

const edges = sourceFiles(SRC).flatMap((f) => importsOf(f, fs.readFileSync(f, 'utf8')));

describe('import direction in src/', () => {
  it('reads the imports (the parser finds the edges the layers are made of)', () => {
    const has = (from: string, to: string) => edges.some((e) => e.from === from && e.to === to);
    expect(has('proxy/http/pipeline.ts', 'a2a/classify.ts')).toBe(true);
    expect(has('main.ts', 'server.ts') || has('main.ts', 'config/config.ts')).toBe(true);
    expect(edges.length).toBeGreaterThan(200);
  });

  it('protocol knowledge never imports plumbing; the guardian never imports the proxy; nothing imports the demo', () => {
    expect(violations(edges)).toEqual([]);
  });

  it('the adapters (proxy/http/, proxy/grpc/) never import each other, and the middle (proxy/*.ts) imports neither', () => {
    expect(edges.some((e) => e.from.startsWith('proxy/grpc/') && e.to.startsWith('proxy/') && adapterOf(e.to) === undefined)).toBe(true);
    expect(adapterViolations(edges)).toEqual([]);
  });

  it('has no import cycle between files (a lazy require() or import() is loaded on use and does not count)', () => {
    expect(cycles(graphOf(edges, (f) => f))).toEqual([]);
  });

  it('has no import cycle between modules (directories, and each file at the root of src/)', () => {
    expect(cycles(graphOf(edges, moduleOf))).toEqual([]);
  });

  it('the binding-neutral middle knows no binding and no transport: call.ts and stages.ts import no adapter, no codec module, no socket module', () => {
    const neutral = ['proxy/call.ts', 'proxy/stages.ts'];
    const adapters = /^(proxy\/http\/|proxy\/grpc\/|a2a\/bindings\/|a2a\/(classify|rest|rebuild|sse)\.ts)/;
    expect(edges.filter((e) => neutral.includes(e.from) && adapters.test(e.to)).map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
    for (const f of neutral) {
      const text = fs.readFileSync(path.join(SRC, f), 'utf8');
      expect(text).not.toMatch(/from 'node:(http|http2|net|tls)'/);
    }
  });

  it('the codecs are the one place a binding is named: no `binding === ...` (or `codec.name === ...`) test outside a2a/', () => {
    const test = /(binding|\.name)\s*[!=]==?\s*'(jsonrpc|rest|grpc)'|'(jsonrpc|rest|grpc)'\s*[!=]==?\s*\w*(binding|\.name)\b/;
    expect(test.test("if (x.binding === 'rest')")).toBe(true);
    expect(test.test("call.codec.name !== 'grpc'")).toBe(true);
    expect(test.test("binding: 'jsonrpc'")).toBe(false);
    const offenders = sourceFiles(SRC)
      .filter((f) => !path.relative(SRC, f).startsWith('a2a'))
      .filter((f) => test.test(fs.readFileSync(f, 'utf8')));
    expect(offenders.map((f) => path.relative(SRC, f))).toEqual([]);
  });
});

describe('the import checker itself', () => {
  const edge = (from: string, to: string, lazy = false): Edge => ({ from, to, lazy });

  it('flags each wrong direction', () => {
    const bad = [
      edge('a2a/classify.ts', 'proxy/errors.ts'),
      edge('a2a/classify.ts', 'aos/schemas.ts'),
      edge('aos/guardian.ts', 'proxy/enforce.ts'),
      edge('guardian/embedded.ts', 'proxy/enforce.ts'),
      edge('proxy/x.ts', 'demo/main.ts'),
      edge('core/errors.ts', 'aos/schemas.ts'),
    ];
    expect(violations(bad)).toHaveLength(bad.length);
    expect(violations([edge('a2a/classify.ts', 'core/json.ts'), edge('proxy/x.ts', 'a2a/y.ts'), edge('demo/a.ts', 'proxy/b.ts')])).toEqual([]);
  });

  it('flags an adapter importing the other, and the middle importing an adapter', () => {
    const bad = [
      edge('proxy/grpc/call.ts', 'proxy/http/forward.ts'),
      edge('proxy/http/pipeline.ts', 'proxy/grpc/relay.ts'),
      edge('proxy/deps.ts', 'proxy/http/forward.ts'),
    ];
    expect(adapterViolations(bad)).toHaveLength(bad.length);
    const good = [
      edge('proxy/grpc/call.ts', 'proxy/headers.ts'),
      edge('proxy/http/pipeline.ts', 'proxy/http/body.ts'),
      edge('server.ts', 'proxy/http/server.ts'),
      edge('proxy/http/relay/stream.ts', 'proxy/http/forward.ts'),
    ];
    expect(adapterViolations(good)).toEqual([]);
  });

  it('finds cycles, and ignores lazy edges', () => {
    expect(cycles(graphOf([edge('proxy/a.ts', 'proxy/b.ts'), edge('proxy/b.ts', 'proxy/a.ts')], (f) => f))).toEqual([['proxy/a.ts', 'proxy/b.ts']]);
    expect(cycles(graphOf([edge('proxy/a.ts', 'proxy/b.ts'), edge('proxy/b.ts', 'proxy/a.ts', true)], (f) => f))).toEqual([]);
    expect(cycles(graphOf([edge('a2a/a.ts', 'aos/b.ts'), edge('aos/c.ts', 'a2a/d.ts')], moduleOf))).toEqual([['a2a', 'aos']]);
  });

  it('reads static, type-only, re-export and lazy imports', () => {
    const file = path.join(SRC, 'proxy', 'probe.ts');
    const text = [
      "import { a } from './http/pipeline';",
      "import type { B } from '../a2a/classify';",
      "export { c } from '../core/errors';",
      "import fs from 'node:fs';",
      "function f() { return require('../observe/otel'); }",
      "type T = typeof import('./http/forward');",
    ].join('\n');
    expect(importsOf(file, text)).toEqual([
      edge('proxy/probe.ts', 'proxy/http/pipeline.ts'),
      edge('proxy/probe.ts', 'a2a/classify.ts'),
      edge('proxy/probe.ts', 'core/errors.ts'),
      edge('proxy/probe.ts', 'observe/otel.ts', true),
      edge('proxy/probe.ts', 'proxy/http/forward.ts'),
    ]);
  });
});
