// `ubicrawl graph export`: merges the agents' edge files into a graph WebGraph loads
// (docs/graph.md "Export"):
//   G.urls            node i's URL on line i (0-based), sorted by UTF-8 bytes
//   G.graph-txt       it.unimi.dsi.webgraph.ASCIIGraph: the node count, then one line per
//                     node with its successors' ids, increasing, single spaces
//   G-host.hosts      the same for hosts (lower-case names, no port) …
//   G-host.graph-txt  … with an arc from host a to host b ≠ a when some page of a links to b
// Arcs are a set: a page fetched twice (recrawl, a restart) contributes the union of its
// outlinks once each. Everything is held in memory (about 100 bytes a distinct URL plus
// 8 a distinct arc); docs/graph.md says how to go beyond that.
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { once } from 'node:events';
import { hostOf } from '../url/normalize.js';
import { findEdgeFiles, parseEdgeLine, readEdgeFile } from './edges.js';
import type { HopType } from './outlinks.js';

export interface GraphExportOptions {
  /** Hop types of the arcs kept (default all: L, E, R). */
  hops?: readonly HopType[];
}

export interface GraphExportResult {
  files: string[];
  nodes: number;
  arcs: number;
  hosts: number;
  hostArcs: number;
  /** Lines of the edge files that did not parse. */
  badLines: number;
  outputs: string[];
}

/** The merged arc lists: source URL → target URLs (a set per source). */
export function mergeEdgeLines(lines: Iterable<string>, hops?: ReadonlySet<string>, into = new Map<string, Set<string>>()): { graph: Map<string, Set<string>>; bad: number } {
  let bad = 0;
  for (const line of lines) {
    if (line === '') continue;
    const rec = parseEdgeLine(line);
    if (!rec) { bad++; continue; }
    let set = into.get(rec.source);
    if (!set) into.set(rec.source, (set = new Set()));
    for (const t of rec.targets) if (!hops || hops.has(t.hop)) set.add(t.url);
  }
  return { graph: into, bad };
}

/** Byte order of UTF-8 strings (URLs here are ASCII, where it is code-unit order: `LC_ALL=C sort`). */
function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface NumberedGraph {
  /** Node names, sorted: node i is names[i]. */
  names: string[];
  /** successors[i]: increasing ids, no repeats. */
  successors: Int32Array[];
  arcs: number;
}

/** Numbers a graph given as name → successor names: every name that appears is a node. */
export function numberGraph(graph: Map<string, Set<string>>, withLoops = true): NumberedGraph {
  const all = new Set<string>();
  for (const [s, ts] of graph) {
    all.add(s);
    for (const t of ts) all.add(t);
  }
  const names = [...all].sort(byteOrder);
  const id = new Map<string, number>();
  for (let i = 0; i < names.length; i++) id.set(names[i]!, i);
  const successors: Int32Array[] = new Array(names.length);
  const empty = new Int32Array(0);
  let arcs = 0;
  for (let i = 0; i < names.length; i++) {
    const ts = graph.get(names[i]!);
    if (!ts || ts.size === 0) { successors[i] = empty; continue; }
    const list: number[] = [];
    for (const t of ts) {
      const j = id.get(t)!;
      if (withLoops || j !== i) list.push(j);
    }
    const arr = Int32Array.from(new Set(list)).sort();
    successors[i] = arr;
    arcs += arr.length;
  }
  return { names, successors, arcs };
}

/** The host graph of a URL graph: host a → host b when a page of a links to a page of b (no loops). */
export function hostGraph(graph: Map<string, Set<string>>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [s, ts] of graph) {
    const hs = hostOf(s);
    let set = out.get(hs);
    if (!set) out.set(hs, (set = new Set()));
    for (const t of ts) {
      const ht = hostOf(t);
      if (!out.has(ht)) out.set(ht, new Set());
      if (ht !== hs) set.add(ht);
    }
  }
  return out;
}

async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const ws = createWriteStream(path);
  let chunk = '';
  for (const l of lines) {
    chunk += l + '\n';
    if (chunk.length >= 1 << 16) {
      if (!ws.write(chunk)) await once(ws, 'drain');
      chunk = '';
    }
  }
  ws.end(chunk);
  await once(ws, 'finish');
}

function* asciiGraphLines(g: NumberedGraph): Generator<string> {
  yield String(g.names.length);
  for (const s of g.successors) yield s.join(' ');
}

/** Reads every edge file under the dirs and writes the four files of `outBase`. */
export async function exportGraph(dirs: readonly string[], outBase: string, o: GraphExportOptions = {}): Promise<GraphExportResult> {
  const files: string[] = [];
  for (const d of dirs) files.push(...(await findEdgeFiles(d)));
  const hops = o.hops ? new Set<string>(o.hops) : undefined;
  const merged = new Map<string, Set<string>>();
  let bad = 0;
  for (const f of files) bad += mergeEdgeLines(readEdgeFile(f), hops, merged).bad;
  const urls = numberGraph(merged);
  const hosts = numberGraph(hostGraph(merged), false);
  const outputs = [`${outBase}.urls`, `${outBase}.graph-txt`, `${outBase}-host.hosts`, `${outBase}-host.graph-txt`];
  await writeLines(outputs[0]!, urls.names);
  await writeLines(outputs[1]!, asciiGraphLines(urls));
  await writeLines(outputs[2]!, hosts.names);
  await writeLines(outputs[3]!, asciiGraphLines(hosts));
  return { files, nodes: urls.names.length, arcs: urls.arcs, hosts: hosts.names.length, hostArcs: hosts.arcs, badLines: bad, outputs };
}

/** `ubicrawl graph export`: 0 done, 1 no edge file found, 2 a file could not be written. */
export async function runGraphExportCommand(dirs: string[], opts: { out: string; hops?: string }): Promise<number> {
  const hops = opts.hops ? ([...opts.hops.toUpperCase()].filter((c) => c === 'L' || c === 'E' || c === 'R') as HopType[]) : undefined;
  let r: GraphExportResult;
  try {
    r = await exportGraph(dirs, opts.out, hops ? { hops } : {});
  } catch (err) {
    process.stderr.write(`ubicrawl: graph export failed: ${(err as Error).message}\n`);
    return 2;
  }
  if (r.files.length === 0) {
    process.stderr.write(`ubicrawl: no edge files (*.edges.gz) under ${dirs.join(', ')}\n`);
    return 1;
  }
  process.stderr.write(`${r.files.length} edge files: ${r.nodes} nodes, ${r.arcs} arcs; ${r.hosts} hosts, ${r.hostArcs} host arcs${r.badLines ? `; ${r.badLines} unreadable lines skipped` : ''}\n`);
  for (const p of r.outputs) process.stdout.write(p + '\n');
  return 0;
}
