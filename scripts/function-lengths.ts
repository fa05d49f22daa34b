/**
 * Lists the functions, arrows and methods in src/ longer than a limit (lines from the declaration's first
 * line to its closing brace), longest first: `node dist/scripts/function-lengths.js [limit=100] [dir=src]`.
 * test/unit/function-length.test.ts holds src/ to 120 lines with the same reader.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export interface LongFunction {
  /** Path relative to the walked folder's parent ('src/main.ts'). */
  readonly file: string;
  readonly name: string;
  readonly line: number;
  readonly lines: number;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The name a reader would search for: the declaration's own, or the variable/property it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string {
  if (node.name !== undefined) return node.name.getText(sf);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) {
    return parent.name.getText(sf);
  }
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

/** Every function-like with a body in one file's text longer than `limit` lines. */
export function longFunctionsIn(file: string, text: string, limit: number): LongFunction[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = sf.getLineAndCharacterOfPosition(fn.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(fn.getEnd()).line;
      const lines = last - first + 1;
      if (lines > limit) found.push({ file, name: nameOf(fn, sf), line: first + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every function over `limit` lines in the .ts files below `dir`, longest first; files named relative to `root`. */
export function longFunctions(dir: string, limit: number, root = path.dirname(dir)): LongFunction[] {
  return sourceFiles(dir)
    .flatMap((f) => longFunctionsIn(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8'), limit))
    .sort((a, b) => b.lines - a.lines);
}

if (require.main === module) {
  const limit = Number(process.argv[2] ?? 100);
  const dir = path.resolve(process.argv[3] ?? 'src');
  for (const f of longFunctions(dir, limit)) console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
}
