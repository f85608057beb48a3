// The folders of src/ form layers: no folder imports, directly or through
// others, a folder that imports it back (docs/architecture.md). The import
// statements of src/**/*.ts (static, `export … from` and dynamic `import()`)
// are parsed with the TypeScript compiler; each folder of src/ is one node,
// each file at the top of src/ (config.ts, index.ts, …) its own node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Compiled to dist/test/: the sources are two folders up.
const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

/** One import from a file of one node to a file of another. */
interface Edge { from: string; to: string; at: string; typeOnly: boolean }

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : []);
}

/** `crawl/` for src/crawl/agent.ts, `config.ts` for src/config.ts. */
function nodeOf(file: string): string {
  const r = relative(SRC, file).split(/[\\/]/);
  return r.length > 1 ? `${r[0]}/` : r[0]!;
}

function isTypeOnly(n: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isImportDeclaration(n)) {
    const c = n.importClause;
    if (!c) return false; // `import './x.js'`: run for its effects
    if (c.isTypeOnly) return true;
    const b = c.namedBindings;
    return !c.name && !!b && ts.isNamedImports(b) && b.elements.length > 0 && b.elements.every((e) => e.isTypeOnly);
  }
  if (n.isTypeOnly) return true;
  const x = n.exportClause;
  return !!x && ts.isNamedExports(x) && x.elements.length > 0 && x.elements.every((e) => e.isTypeOnly);
}

let parsed: Edge[] | undefined;

/** Every relative import of src/ that crosses from one node to another (parsed once). */
function importEdges(): Edge[] {
  if (parsed) return parsed;
  const edges: Edge[] = [];
  for (const file of tsFiles(SRC)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (spec: string, node: ts.Node, typeOnly: boolean) => {
      if (!spec.startsWith('.')) return; // a package or a node: built-in
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      const from = nodeOf(file);
      const to = nodeOf(target);
      if (from === to) return;
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      edges.push({ from, to, at: `src/${relative(SRC, file)}:${line}`, typeOnly });
    };
    const visit = (n: ts.Node): void => {
      if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
        add(n.moduleSpecifier.text, n, isTypeOnly(n));
      } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const a = n.arguments[0];
        if (a && ts.isStringLiteralLike(a)) add(a.text, n, false);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  parsed = edges;
  return edges;
}

/** A cycle of the graph as its edges (one import statement each), or null when there is none. */
function findCycle(edges: readonly Edge[]): Edge[] | null {
  const out = new Map<string, Edge[]>();
  for (const e of edges) {
    const list = out.get(e.from) ?? [];
    if (!list.some((x) => x.to === e.to)) list.push(e); // one witness per pair of nodes
    out.set(e.from, list);
  }
  const state = new Map<string, 'open' | 'done'>();
  const path: Edge[] = [];
  const dfs = (v: string): Edge[] | null => {
    state.set(v, 'open');
    for (const e of [...(out.get(v) ?? [])].sort((a, b) => a.to.localeCompare(b.to))) {
      const s = state.get(e.to);
      if (s === 'open') return [...path.slice(path.findIndex((p) => p.from === e.to)), e];
      if (s === 'done') continue;
      path.push(e);
      const c = dfs(e.to);
      if (c) return c;
      path.pop();
    }
    state.set(v, 'done');
    return null;
  };
  for (const v of [...out.keys()].sort()) {
    if (state.has(v)) continue;
    const c = dfs(v);
    if (c) return c;
  }
  return null;
}

const describeCycle = (c: readonly Edge[]): string =>
  [c[0]!.from, ...c.map((e) => `${e.to}   (${e.at}${e.typeOnly ? ', type only' : ''})`)].join('\n  → ');

/**
 * Known, type-only: config.ts takes each section's type from the module it
 * configures, and those modules take their defaults from config.ts (one
 * source of defaults). Erased at run time; moving the section types into
 * config.ts ends it. Listed so that no other edge into a cycle goes unnoticed.
 */
const KNOWN_TYPE_EDGES: ReadonlySet<string> = new Set([
  'config.ts → dedup/', 'config.ts → fetch/', 'config.ts → politeness/', 'config.ts → recrawl/', 'config.ts → scope/',
  'config.ts → sitemap/', 'config.ts → warc/',
]);

test('src/ has no import cycle between folders at run time (type-only imports are erased)', () => {
  const edges = importEdges();
  assert.ok(edges.length > 50, `parsed ${edges.length} imports between folders: the parser found the sources`);
  const cycle = findCycle(edges.filter((e) => !e.typeOnly));
  assert.equal(cycle, null, cycle ? `import cycle between folders of src/:\n  ${describeCycle(cycle)}` : '');
});

test('src/ has no import cycle between folders counting type-only imports, but for the known config.ts section types', () => {
  const edges = importEdges();
  const known = (e: Edge) => e.typeOnly && KNOWN_TYPE_EDGES.has(`${e.from} → ${e.to}`);
  const cycle = findCycle(edges.filter((e) => !known(e)));
  assert.equal(cycle, null, cycle ? `import cycle between folders of src/:\n  ${describeCycle(cycle)}` : '');
  // The list stays true: an edge that is gone (or no longer type-only) leaves it.
  const present = new Set(edges.filter(known).map((e) => `${e.from} → ${e.to}`));
  const stale = [...KNOWN_TYPE_EDGES].filter((k) => !present.has(k) || edges.some((e) => !e.typeOnly && `${e.from} → ${e.to}` === k));
  assert.deepEqual(stale, [], 'remove these from KNOWN_TYPE_EDGES');
});

test('the cycle finder reports a cycle with the import statements that close it', () => {
  const e = (from: string, to: string, typeOnly = false): Edge => ({ from, to, at: `src/${from}x.ts:1`, typeOnly });
  assert.equal(findCycle([e('a/', 'b/'), e('b/', 'c/'), e('a/', 'c/')]), null);
  const c = findCycle([e('a/', 'b/'), e('b/', 'c/'), e('c/', 'a/', true), e('c/', 'd/')]);
  assert.deepEqual(c?.map((x) => `${x.from}>${x.to}`), ['a/>b/', 'b/>c/', 'c/>a/']);
  assert.match(describeCycle(c!), /a\/\n {2}→ b\/ .*\n {2}→ c\/ .*\n {2}→ a\/ {3}\(src\/c\/x\.ts:1, type only\)/);
});
