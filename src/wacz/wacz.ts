// `ubicrawl wacz`: packs the agents' WARC files into one WACZ 1.1.1 file
// (specs.webrecorder.net/wacz/1.1.1, docs/warc.md "WACZ"):
//   archive/<each>.warc.gz          the WARC files, stored as they are
//   indexes/index.cdxj              one sorted CDXJ index of them all (filename = the name in archive/)
//   pages/pages.jsonl               a header line, then one page per successful HTML capture
//   datapackage.json                profile, wacz_version, resources (path, sha256 hash, bytes) …
//   datapackage-digest.json         the sha256 of datapackage.json
// Every entry is STORED (src/wacz/zip.ts). WARC files are read twice: once for their
// hashes and CDXJ lines, once to copy them into the ZIP.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { buildCdxj, compareLines, parseCdxjLine } from '../warc/cdxj.js';
import { crc32 } from '../util/crc32.js';
import { findFiles } from '../util/find-files.js';
import { ZipWriter, type ZipOptions } from './zip.js';

export const WACZ_VERSION = '1.1.1';
const SOFTWARE = 'ubicrawl/0.1';

export interface WaczResource {
  name: string;
  path: string;
  hash: string;
  bytes: number;
}

export interface WaczResult {
  output: string;
  warcs: string[];
  pages: number;
  captures: number;
  resources: WaczResource[];
}

/** Complete WARC files (`.warc.gz`, no `.open`) under a dir: itself, its warc/, or data dirs one level down. */
export async function findWarcFiles(dir: string): Promise<string[]> {
  return findFiles(dir, {
    match: (name) => /\.warc\.gz$/.test(name) && !/\.warc\.(wat|wet)\.gz$/.test(name),
    enter: (name, depth) => depth === 0 || name === 'warc',
  });
}

async function hashFile(path: string): Promise<{ sha256: string; crc: number; bytes: number }> {
  const h = createHash('sha256');
  let crc = 0;
  let bytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const b = chunk as Buffer;
    h.update(b);
    crc = crc32(b, crc);
    bytes += b.length;
  }
  return { sha256: `sha256:${h.digest('hex')}`, crc, bytes };
}

function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** `YYYYMMDDhhmmss` → RFC 3339. */
function rfc3339(ts: string): string {
  return `${ts.slice(0, 4)}-${ts.slice(4, 6)}-${ts.slice(6, 8)}T${ts.slice(8, 10)}:${ts.slice(10, 12)}:${ts.slice(12, 14)}Z`;
}

/**
 * pages.jsonl: the header line WACZ shows, then the first successful HTML capture of
 * each URL, oldest first (ReplayWeb.page lists these as the collection's pages).
 */
export function pagesJsonl(lines: readonly string[]): { text: string; count: number; first?: { url: string; ts: string } } {
  const best = new Map<string, { url: string; ts: string }>();
  for (const l of lines) {
    const c = parseCdxjLine(l);
    if (!c || c.status !== 200 || !c.mime || !/html/i.test(c.mime)) continue;
    const prev = best.get(c.url);
    if (!prev || c.timestamp < prev.ts) best.set(c.url, { url: c.url, ts: c.timestamp });
  }
  const pages = [...best.values()].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.url < b.url ? -1 : 1));
  let text = JSON.stringify({ format: 'json-pages-1.0', id: 'pages', title: 'All Pages' }) + '\n';
  pages.forEach((p, i) => {
    text += JSON.stringify({ id: createHash('sha1').update(`${p.ts} ${p.url}`).digest('hex').slice(0, 12) + i.toString(36), url: p.url, ts: rfc3339(p.ts) }) + '\n';
  });
  return { text, count: pages.length, ...(pages[0] ? { first: pages[0] } : {}) };
}

export interface WaczOptions extends ZipOptions {
  title?: string;
  description?: string;
}

/** Writes the WACZ of every complete WARC file under the dirs. */
export async function writeWacz(dirs: readonly string[], output: string, o: WaczOptions = {}): Promise<WaczResult> {
  const warcs: string[] = [];
  for (const d of dirs) {
    const st = await stat(d).catch(() => null);
    if (st?.isFile()) warcs.push(d);
    else warcs.push(...(await findWarcFiles(d)));
  }
  if (warcs.length === 0) throw new Error(`no WARC files (*.warc.gz) under ${dirs.join(', ')}`);
  const names = new Set<string>();
  for (const w of warcs) {
    const n = basename(w);
    if (names.has(n)) throw new Error(`two WARC files named ${n}: archive/ needs unique names`);
    names.add(n);
  }
  warcs.sort((a, b) => (basename(a) < basename(b) ? -1 : 1));

  const resources: WaczResource[] = [];
  const sums = new Map<string, { crc: number; bytes: number }>();
  let cdxLines: string[] = [];
  for (const w of warcs) {
    const h = await hashFile(w);
    sums.set(w, h);
    resources.push({ name: basename(w), path: `archive/${basename(w)}`, hash: h.sha256, bytes: h.bytes });
    // The CDXJ `filename` is the name inside archive/, which is how WACZ readers resolve it.
    cdxLines = cdxLines.concat((await buildCdxj(w, { filename: basename(w) })).lines);
  }
  cdxLines.sort(compareLines);
  const index = Buffer.from(cdxLines.length ? cdxLines.join('\n') + '\n' : '', 'utf8');
  const pages = pagesJsonl(cdxLines);
  const pagesBytes = Buffer.from(pages.text, 'utf8');
  resources.push({ name: 'index.cdxj', path: 'indexes/index.cdxj', hash: sha256(index), bytes: index.length });
  resources.push({ name: 'pages.jsonl', path: 'pages/pages.jsonl', hash: sha256(pagesBytes), bytes: pagesBytes.length });

  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const datapackage: Record<string, unknown> = {
    profile: 'data-package',
    wacz_version: WACZ_VERSION,
    title: o.title ?? 'ubicrawl crawl',
    description: o.description ?? `${warcs.length} WARC files written by ubicrawl, ${pages.count} pages.`,
    created: now,
    modified: now,
    software: SOFTWARE,
    ...(pages.first ? { mainPageUrl: pages.first.url, mainPageDate: rfc3339(pages.first.ts) } : {}),
    resources,
  };
  const dp = Buffer.from(JSON.stringify(datapackage, null, 2) + '\n', 'utf8');
  const digest = Buffer.from(JSON.stringify({ path: 'datapackage.json', hash: sha256(dp) }, null, 2) + '\n', 'utf8');

  const zip = await ZipWriter.create(output, o);
  try {
    for (const w of warcs) {
      const s = sums.get(w)!;
      await zip.addFile(`archive/${basename(w)}`, w, s.bytes, s.crc);
    }
    await zip.addBuffer('indexes/index.cdxj', index);
    await zip.addBuffer('pages/pages.jsonl', pagesBytes);
    await zip.addBuffer('datapackage.json', dp);
    await zip.addBuffer('datapackage-digest.json', digest);
  } finally {
    await zip.close();
  }
  return { output, warcs, pages: pages.count, captures: cdxLines.length, resources };
}

/** `ubicrawl wacz`: 0 written, 1 no WARC file found or a file could not be read or written. */
export async function runWaczCommand(opts: { dir: string[]; out: string; title?: string }, defaultDir: string): Promise<number> {
  const dirs = opts.dir.length ? opts.dir : [defaultDir];
  try {
    const r = await writeWacz(dirs, opts.out, opts.title ? { title: opts.title } : {});
    process.stderr.write(`${opts.out}: ${r.warcs.length} WARC files, ${r.captures} captures, ${r.pages} pages\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`ubicrawl: wacz: ${(err as Error).message}\n`);
    return 1;
  }
}
