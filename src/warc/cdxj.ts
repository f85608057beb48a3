// CDXJ index of a WARC file, in the format pywb reads and its indexer (cdxj-indexer,
// what `wb-manager add` runs) writes. One line per capture, lines sorted:
//
//   com,example)/page?a=1 20240102030405 {"url": "http://example.com/page?a=1", "mime": "text/html", "status": "200", "digest": "…", "length": "5115", "offset": "4242", "filename": "ubicrawl-….warc.gz"}
//
// - key: Python surt's key of WARC-Target-URI (surt.ts); timestamp: WARC-Date as 14
//   digits (seconds; the milliseconds we write are dropped, as pywb does);
// - JSON: url, mime, status, digest, length, offset, filename in that order, written
//   the way Python's json.dumps writes them (", " and ": " separators, non-ASCII as
//   \uXXXX), so a line is byte-equal to cdxj-indexer's for the same record and the
//   file sorts the same way under `LC_ALL=C sort`. length/offset/status are strings.
// - records: response, revisit, resource and metadata, except resource/metadata
//   records whose block is application/warc-fields (cdxj-indexer's defaults; pywb's
//   older indexer skips the same ones). request and warcinfo records are not indexed,
//   so our near-duplicate notes (metadata, warc-fields) are not either.
// - mime: "warc/revisit" for revisits (pywb resolves those through the digest),
//   otherwise the HTTP Content-Type (WARC Content-Type for resource/metadata)
//   without parameters; status: the HTTP status of response and revisit records;
//   digest: WARC-Payload-Digest without its `algo:` label. Fields without a value
//   are left out, as cdxj-indexer leaves them out.
import { rename, unlink, writeFile, stat, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { createHash } from 'node:crypto';
import { readWarc } from './reader.js';
import type { WarcEntry } from './reader.js';
import { base32 } from './digest.js';
import { surt } from './surt.js';

export { surt } from './surt.js';

/** One parsed CDXJ line. */
export interface CdxjCapture {
  urlkey: string;
  /** 14 digits, UTC. */
  timestamp: string;
  url: string;
  mime: string | null;
  status: number | null;
  digest: string | null;
  length: number;
  offset: number;
  filename: string;
}

export interface CdxjBuild {
  /** Sorted CDXJ lines, without line ends. */
  lines: string[];
  /** Whole records read from the file (indexed or not). */
  records: number;
  /** Records that could have been indexed but had no usable WARC-Date or target URI. */
  skipped: number;
  /** Where reading stopped and why (a cut-off or corrupt tail ends the index there). */
  end: number;
  size: number;
  problem: null | 'truncated' | 'corrupt';
}

const INDEXED_TYPES = new Set(['response', 'revisit', 'resource', 'metadata']);
const MIME_SPLIT = /[;\s]/;
const WARC_DATE = /^\s*(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?)?)?/;
const NON_ASCII = /[\u0080-\uffff]/g;

/** WARC-Date (W3C-DTF, any precision) → `YYYYMMDDhhmmss`; null when it is not a date. */
export function cdxjTimestamp(warcDate: string | undefined): string | null {
  const m = warcDate ? WARC_DATE.exec(warcDate) : null;
  if (!m) return null;
  return m[1] + (m[2] ?? '01') + (m[3] ?? '01') + (m[4] ?? '00') + (m[5] ?? '00') + (m[6] ?? '00');
}

/** JSON.stringify plus Python's ensure_ascii: everything past U+007E as \uXXXX. */
function pyJsonString(s: string): string {
  return JSON.stringify(s).replace(NON_ASCII, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** `<key> <timestamp> {"k": "v", …}` with Python json.dumps' separators. */
export function formatCdxjLine(urlkey: string, timestamp: string, fields: Array<[string, string]>): string {
  let json = '{';
  for (let i = 0; i < fields.length; i++) {
    if (i) json += ', ';
    json += pyJsonString(fields[i][0]) + ': ' + pyJsonString(fields[i][1]);
  }
  return `${urlkey} ${timestamp} ${json}}`;
}

/** Parses one CDXJ line (ours, pywb's or warcio's); null when it is not one. */
export function parseCdxjLine(line: string): CdxjCapture | null {
  const a = line.indexOf(' ');
  const b = a > 0 ? line.indexOf(' ', a + 1) : -1;
  if (b < 0 || line[b + 1] !== '{') return null;
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(line.slice(b + 1)) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!j || typeof j !== 'object') return null;
  const str = (v: unknown): string | null => (v === undefined || v === null || v === '' || v === '-' ? null : String(v));
  const offset = Number(j.offset);
  const length = Number(j.length);
  const filename = str(j.filename);
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length <= 0 || !filename) return null;
  const status = str(j.status);
  return {
    urlkey: line.slice(0, a),
    timestamp: line.slice(a + 1, b),
    url: str(j.url) ?? '',
    mime: str(j.mime),
    status: status !== null && /^\d{3}$/.test(status) ? Number(status) : null,
    digest: str(j.digest),
    length,
    offset,
    filename,
  };
}

function firstHeader(list: [string, string][] | undefined, name: string): string | undefined {
  if (!list) return undefined;
  const lower = name.toLowerCase();
  for (const [k, v] of list) if (k.toLowerCase() === lower) return v;
  return undefined;
}

function warcHeader(h: Record<string, string>, name: string): string | undefined {
  if (name in h) return h[name];
  const lower = name.toLowerCase();
  for (const k in h) if (k.toLowerCase() === lower) return h[k];
  return undefined;
}

/**
 * The CDXJ line of one record, or null when the record is not indexed (request,
 * warcinfo, warc-fields metadata, …) or cannot be (no target URI or date).
 * `skipped` is set when an indexable record lacked what a line needs.
 */
export function cdxjLineFor(e: WarcEntry, filename: string): { line: string | null; skipped: boolean } {
  if (!INDEXED_TYPES.has(e.type)) return { line: null, skipped: false };
  const ctype = warcHeader(e.headers, 'Content-Type');
  if ((e.type === 'resource' || e.type === 'metadata') && ctype && /^\s*application\/warc-fields\b/i.test(ctype))
    return { line: null, skipped: false };
  const url = warcHeader(e.headers, 'WARC-Target-URI');
  const ts = cdxjTimestamp(warcHeader(e.headers, 'WARC-Date'));
  if (!url || !ts) return { line: null, skipped: true };
  const fields: Array<[string, string]> = [['url', url]];
  let mime: string | undefined;
  if (e.type === 'revisit') mime = 'warc/revisit';
  else if (e.type === 'response') mime = firstHeader(e.httpHeaders, 'Content-Type');
  else mime = ctype;
  if (mime) {
    const m = mime.trim().split(MIME_SPLIT, 1)[0].trim();
    if (m) fields.push(['mime', m]);
  }
  if ((e.type === 'response' || e.type === 'revisit') && e.httpStatusLine) {
    const code = e.httpStatusLine.trim().split(/\s+/)[1];
    if (code && /^\d{3}$/.test(code)) fields.push(['status', code]);
  }
  let digest = warcHeader(e.headers, 'WARC-Payload-Digest');
  if (!digest && e.payload) {
    // cdxj-indexer computes a missing digest the way warcio writes one: sha1, base32.
    digest = 'sha1:' + base32(createHash('sha1').update(e.payload).digest());
  }
  if (digest) fields.push(['digest', digest.slice(digest.lastIndexOf(':') + 1).trim()]);
  fields.push(['length', String(e.length)], ['offset', String(e.offset)], ['filename', filename]);
  return { line: formatCdxjLine(surt(url), ts, fields), skipped: false };
}

/** Plain code-unit order: our lines are ASCII, so this is byte order (`LC_ALL=C sort`). */
export function compareLines(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const YIELD_EVERY = 256;

/**
 * Reads every whole record of `path` and returns its sorted CDXJ lines. A cut-off or
 * corrupt tail ends the index there (reported in `problem`); it never throws on bad
 * data, only on I/O errors such as a missing file. The event loop gets a turn every
 * few hundred records, so indexing a 1 GiB file does not stall a crawl for seconds.
 */
export async function buildCdxj(path: string, opts: { filename?: string } = {}): Promise<CdxjBuild> {
  const filename = opts.filename ?? basename(path);
  const out: CdxjBuild = { lines: [], records: 0, skipped: 0, end: 0, size: 0, problem: null };
  const onEnd = (t: { end: number; size: number; problem: null | 'truncated' | 'corrupt' }) => {
    out.end = t.end;
    out.size = t.size;
    out.problem = t.problem;
  };
  for await (const e of readWarc(path, { payload: true, onEnd })) {
    out.records++;
    const r = cdxjLineFor(e, filename);
    if (r.line) out.lines.push(r.line);
    else if (r.skipped) out.skipped++;
    if (out.records % YIELD_EVERY === 0) await new Promise<void>((res) => setImmediate(res));
  }
  out.lines.sort(compareLines);
  return out;
}

/** Where the index of `warcPath` lives: next to it, `<file>.cdxj`. */
export function cdxjPathFor(warcPath: string): string {
  return warcPath + '.cdxj';
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  try {
    await writeFile(tmp, text);
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

function render(lines: string[]): string {
  return lines.length ? lines.join('\n') + '\n' : '';
}

/**
 * Builds the CDXJ index of one WARC file and writes it next to the file as
 * `<file>.cdxj` (through a temporary file and a rename, so a reader never sees half
 * an index). Returns the index path. Meant for WarcWriter's onFileClosed hook.
 */
export async function indexWarcFile(path: string): Promise<string> {
  const built = await buildCdxj(path);
  const target = cdxjPathFor(path);
  await writeAtomically(target, render(built.lines));
  return target;
}

export interface CommandIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const WARC_NAME = /\.warc(\.gz)?(\.open)?$/i;

/**
 * `ubicrawl index <warc|dir>…`: (re)builds `<file>.cdxj` for each WARC file (a
 * directory stands for the WARC files directly in it). Files still named `.open`
 * are skipped: they are being written, or a crashed writer left them and its next
 * WarcWriter.open() repairs, renames and indexes them. Exit code 0 when every file
 * was indexed whole, 1 when a file was missing, unreadable or had a damaged tail
 * (its whole records are still indexed), 2 on a usage error.
 */
export async function runIndexCommand(paths: string[], io: CommandIO = process): Promise<number> {
  if (!paths.length) {
    io.stderr.write('usage: ubicrawl index <warc-file|dir>...\n');
    return 2;
  }
  let code = 0;
  const files: string[] = [];
  for (const p of paths) {
    let st;
    try {
      st = await stat(p);
    } catch (e) {
      io.stderr.write(`${p}: ${(e as Error).message}\n`);
      code = 1;
      continue;
    }
    if (st.isDirectory()) {
      const names = (await readdir(p)).filter((n) => WARC_NAME.test(n)).sort();
      for (const n of names) files.push(join(p, n));
    } else files.push(p);
  }
  for (const f of files) {
    if (/\.open$/i.test(f)) {
      io.stderr.write(`${f}: skipped, still open (a crashed writer's file is repaired and indexed by its next start)\n`);
      continue;
    }
    try {
      const built = await buildCdxj(f);
      const target = cdxjPathFor(f);
      await writeAtomically(target, render(built.lines));
      io.stdout.write(`${target}: ${built.lines.length} captures from ${built.records} records\n`);
      if (built.skipped) io.stderr.write(`${f}: ${built.skipped} records without a target URI or date were not indexed\n`);
      if (built.problem) {
        io.stderr.write(
          `${f}: ${built.problem} data at offset ${built.end} of ${built.size}; the whole records before it are indexed\n`,
        );
        code = 1;
      }
    } catch (e) {
      io.stderr.write(`${f}: ${(e as Error).message}\n`);
      code = 1;
    }
  }
  return code;
}
