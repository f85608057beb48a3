// Finding a URL in a directory of WARC files through their CDXJ indexes, and reading
// back the stored response (`ubicrawl warc get`, the API's `/urls?url=`).
//
// Which index serves which file: every WARC file in the directory (`.warc.gz`,
// `.warc`, and the `.open` file being written) is looked up through `<file>.cdxj`
// when that exists and is not older than the file; otherwise the file is indexed in
// memory for the lookup (cached while its size and mtime stay the same). So a page in
// the file still being written, or in a file whose index is still being built, is
// found too.
//
// How a `.cdxj` file is searched, by size: up to 1 MiB it is read whole and
// binary-searched as an array of lines (one read beats a dozen small ones); larger
// ones are binary-searched on disk (pywb's and look(1)'s method: probe the middle,
// skip to the next line start, compare, halve), about 20 reads of 8 KiB for a
// 40 MB index of a 1 GiB WARC, then read forward over the matching lines.
//
// Reading a capture: the line's offset/length address one gzip member (one record,
// docs/warc.md); it is inflated, its CRC checked by zlib, and parsed with warcio.
import { open, readdir, stat, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join, isAbsolute, normalize, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { AsyncIterReader, WARCParser } from 'warcio';
import { splitHttp } from './reader.js';
import { buildCdxj, cdxjPathFor, compareLines, parseCdxjLine, targetUri } from './cdxj.js';
import type { CdxjCapture, CommandIO } from './cdxj.js';
import { surt } from './surt.js';

export type { CdxjCapture } from './cdxj.js';

/** A capture as `lookupUrl` lists it. */
export type Capture = CdxjCapture;

export interface StoredResponse {
  /** WARC-Target-URI of the capture. */
  url: string;
  /** 14-digit UTC timestamp (WARC-Date). */
  timestamp: string;
  /** WARC-Type of the capture: response, revisit, resource or metadata. */
  type: string;
  /** HTTP status (200 for resource/metadata records, which have no HTTP part). */
  status: number;
  /** HTTP status line as stored, e.g. `HTTP/1.1 200 OK`. */
  statusLine: string;
  /** HTTP header fields as stored, in order, repeated fields kept. */
  headers: [string, string][];
  /**
   * The entity body as stored: as received, still content-coded when the headers say so
   * (docs/warc.md "Faithful records"); older records hold it decoded.
   * For a revisit: the original capture's payload, found through the index.
   */
  payload: Uint8Array;
  /** The capture's record: file name (relative to the directory), offset, length. */
  filename: string;
  offset: number;
  length: number;
  digest: string | null;
  /** For a revisit: the record the payload was read from, or null when it was not found. */
  payloadFrom?: { url: string; timestamp: string; filename: string; offset: number; length: number } | null;
}

/** A record read back from (file, offset, length). */
export interface RecordAt {
  type: string;
  headers: Record<string, string>;
  httpStatusLine?: string;
  httpHeaders?: [string, string][];
  /** Entity body for application/http records, else the whole block. */
  payload: Uint8Array;
}

const SMALL_INDEX = 1 << 20;
const PROBE = 8192;
const WARC_NAME = /\.warc(\.gz)?(\.open)?$/i;

// ---------------------------------------------------------------------------
// Searching sorted lines

/** Index of the first element of sorted `lines` that is >= `prefix`. */
function lowerBound(lines: string[], prefix: string): number {
  let lo = 0;
  let hi = lines.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareLines(lines[mid], prefix) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function matchesInArray(lines: string[], prefix: string): string[] {
  const out: string[] = [];
  for (let i = lowerBound(lines, prefix); i < lines.length && lines[i].startsWith(prefix); i++) out.push(lines[i]);
  return out;
}

async function readAt(fh: FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/**
 * The first line that starts at or after `pos` (pos 0 is a line start; otherwise the
 * line start is just past the first '\n' at or after pos - 1), or null at EOF.
 */
async function lineFrom(fh: FileHandle, size: number, pos: number): Promise<{ start: number; line: string } | null> {
  let start = pos;
  if (pos > 0) {
    let at = pos - 1;
    for (;;) {
      if (at >= size) return null;
      const chunk = await readAt(fh, at, PROBE);
      const nl = chunk.indexOf(10);
      if (nl >= 0) {
        start = at + nl + 1;
        break;
      }
      at += chunk.length;
    }
  }
  if (start >= size) return null;
  const parts: Buffer[] = [];
  for (let at = start; at < size; ) {
    const chunk = await readAt(fh, at, PROBE);
    if (!chunk.length) break;
    const nl = chunk.indexOf(10);
    if (nl >= 0) {
      parts.push(chunk.subarray(0, nl));
      break;
    }
    parts.push(chunk);
    at += chunk.length;
  }
  return { start, line: Buffer.concat(parts).toString('utf8') };
}

/** Lines of a sorted file that start with `prefix`, by on-disk binary search. */
async function matchesInFile(path: string, prefix: string): Promise<string[]> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size <= SMALL_INDEX) {
      const text = (await readAt(fh, 0, size)).toString('utf8');
      return matchesInArray(text.split('\n'), prefix);
    }
    // Invariant: lo is a line start and every line that starts before lo is < prefix.
    let lo = 0;
    let hi = size;
    while (hi - lo > PROBE) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const l = await lineFrom(fh, size, mid);
      if (!l || l.start >= hi) {
        hi = mid;
        continue;
      }
      if (compareLines(l.line, prefix) < 0) lo = l.start;
      else hi = mid;
    }
    // Read forward from lo: skip what sorts before prefix, keep the matching run.
    const out: string[] = [];
    let pos = lo;
    let carry = '';
    while (pos < size) {
      const chunk = await readAt(fh, pos, 4 * PROBE);
      if (!chunk.length) break;
      pos += chunk.length;
      const text = carry + chunk.toString('latin1');
      const lines = text.split('\n');
      carry = pos < size ? lines.pop()! : '';
      for (const raw of lines) {
        const line = Buffer.from(raw, 'latin1').toString('utf8');
        if (!line) continue;
        const c = compareLines(line, prefix);
        if (c < 0) continue;
        if (!line.startsWith(prefix)) return out;
        out.push(line);
      }
    }
    if (carry) {
      const line = Buffer.from(carry, 'latin1').toString('utf8');
      if (line.startsWith(prefix)) out.push(line);
    }
    return out;
  } finally {
    await fh.close();
  }
}

// ---------------------------------------------------------------------------
// Index sources of a directory

interface MemoryIndex {
  size: number;
  mtimeMs: number;
  lines: string[];
}

// In-memory indexes of files without a usable .cdxj, keyed by path; a few at most.
const memo = new Map<string, MemoryIndex>();
const MEMO_MAX = 8;

async function memoryLines(path: string, size: number, mtimeMs: number): Promise<string[]> {
  const hit = memo.get(path);
  if (hit && hit.size === size && hit.mtimeMs === mtimeMs) {
    memo.delete(path);
    memo.set(path, hit); // most recently used last
    return hit.lines;
  }
  const built = await buildCdxj(path);
  memo.set(path, { size, mtimeMs, lines: built.lines });
  while (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value as string);
  return built.lines;
}

async function capturesIn(dir: string, prefix: string): Promise<CdxjCapture[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const present = new Set(names);
  const lines: string[] = [];
  const queue = names.filter((n) => WARC_NAME.test(n)).sort();
  for (let qi = 0; qi < queue.length; qi++) {
    const name = queue[qi];
    const warc = join(dir, name);
    try {
      const ws = await stat(warc).catch((e: NodeJS.ErrnoException) => {
        // An .open file that completed since readdir(): look at its final name instead.
        const final = name.replace(/\.open$/i, '');
        if (e.code === 'ENOENT' && final !== name && !present.has(final)) {
          present.add(final);
          present.add(cdxjPathFor(final));
          queue.push(final);
        }
        throw e;
      });
      if (!ws.isFile()) continue;
      const idx = cdxjPathFor(name);
      let fresh = false;
      if (present.has(idx)) {
        const is = await stat(join(dir, idx)).catch(() => null);
        fresh = !!is && is.mtimeMs >= ws.mtimeMs;
      }
      if (fresh) lines.push(...(await matchesInFile(join(dir, idx), prefix)));
      else lines.push(...matchesInArray(await memoryLines(warc, ws.size, ws.mtimeMs), prefix));
    } catch {
      // A file renamed or removed under us (an .open file completing): skip it.
    }
  }
  const out: CdxjCapture[] = [];
  for (const l of lines) {
    const c = parseCdxjLine(l);
    if (c) out.push(c);
  }
  // The same record can be listed twice (an .open file renamed between two reads).
  const seen = new Set<string>();
  return out
    .sort((a, b) => compareLines(a.timestamp, b.timestamp) || compareLines(a.filename, b.filename) || a.offset - b.offset)
    .filter((c) => {
      const k = `${c.filename.replace(/\.open$/, '')} ${c.offset}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
}

/**
 * Every capture of `url` (all URLs with its SURT key, so `http://www.x/` and
 * `https://x/` are the same page, as in pywb) in the WARC files of `warcDir`, oldest
 * first. An unreadable or missing directory gives an empty list.
 */
export async function lookupUrl(warcDir: string, url: string): Promise<Capture[]> {
  return capturesIn(warcDir, surt(url) + ' ');
}

// ---------------------------------------------------------------------------
// Reading one record

/** `filename` of a CDXJ line as a path inside `dir`; null if it would leave it. */
function resolveIn(dir: string, filename: string): string | null {
  if (!filename || isAbsolute(filename)) return null;
  const n = normalize(filename);
  if (n === '..' || n.startsWith('..' + sep) || n.split(/[\\/]/).includes('..')) return null;
  return join(dir, n);
}

async function readSlice(path: string, offset: number, length: number): Promise<Buffer | null> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    // An .open file completes by a rename: follow it.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' && path.endsWith('.open')) {
      return readSlice(path.slice(0, -'.open'.length), offset, length);
    }
    return null;
  }
  try {
    const buf = await readAt(fh, offset, length);
    return buf.length === length ? buf : null;
  } catch {
    return null;
  } finally {
    await fh.close();
  }
}

/**
 * The record at (offset, length) of a WARC file: one gzip member for .warc.gz, the raw
 * record for .warc. Null when it is missing, cut off, corrupt or not a WARC record.
 */
export async function readRecordAt(path: string, offset: number, length: number): Promise<RecordAt | null> {
  const raw = await readSlice(path, offset, length);
  if (!raw) return null;
  let data: Buffer = raw;
  if (raw[0] === 0x1f && raw[1] === 0x8b) {
    try {
      data = gunzipSync(raw);
    } catch {
      return null;
    }
  }
  try {
    const parser = new WARCParser(new AsyncIterReader([data], null), { keepHeadersCase: true, parseHttp: false });
    const rec = await parser.parse();
    if (!rec) return null;
    const declared = rec.warcContentLength;
    const block = await rec.readFully(false);
    if (!Number.isFinite(declared) || block.length < declared) return null;
    const headers: Record<string, string> = {};
    for (const [k, v] of rec.warcHeaders.headers) headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    const out: RecordAt = { type: rec.warcType ?? '', headers, payload: block };
    const ct = rec.warcContentType ?? '';
    if (/^\s*application\/http\b/i.test(ct)) {
      const http = splitHttp(block);
      if (http) {
        out.httpStatusLine = http.statusLine;
        out.httpHeaders = http.headers;
        out.payload = http.payload;
      }
    }
    return out;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// The stored response of a URL

const TS_FILL = '00000101000000';

function tsMillis(ts: string): number {
  const t = (ts + TS_FILL.slice(ts.length)).slice(0, 14);
  return Date.UTC(+t.slice(0, 4), +t.slice(4, 6) - 1, +t.slice(6, 8), +t.slice(8, 10), +t.slice(10, 12), +t.slice(12, 14));
}

function wantedMillis(t: string | Date | undefined): number | null {
  if (t === undefined) return null;
  if (t instanceof Date) return Number.isFinite(t.getTime()) ? t.getTime() : null;
  const digits = String(t).replace(/[^0-9]/g, '');
  return digits.length >= 4 ? tsMillis(digits.slice(0, 14)) : null;
}

function sameUrl(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/** Captures in order of preference: exact URL first, then nearest to `when` (or newest). */
function rank(caps: Capture[], url: string, when: number | null): Capture[] {
  const exact = caps.filter((c) => sameUrl(c.url, url));
  const pool = exact.length ? exact : caps;
  const scored = pool.map((c, i) => ({ c, i, t: tsMillis(c.timestamp) }));
  scored.sort((x, y) => {
    if (when !== null) {
      const d = Math.abs(x.t - when) - Math.abs(y.t - when);
      if (d) return d;
    }
    return y.t - x.t || y.i - x.i; // newest first; among equals the later record
  });
  return scored.map((s) => s.c);
}

function statusOf(line: string | undefined): number | null {
  const code = line?.trim().split(/\s+/)[1];
  return code && /^\d{3}$/.test(code) ? Number(code) : null;
}

function warcField(h: Record<string, string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const k in h) if (k.toLowerCase() === lower) return h[k];
  return undefined;
}

/**
 * Index digests compared by value: indexes written before the label was kept
 * (`ABC…`) and after (`sha1:ABC…`) may sit side by side in one directory.
 */
function sameDigest(a: string, b: string): boolean {
  if (a === b) return true;
  const ca = a.indexOf(':'), cb = b.indexOf(':');
  if (ca >= 0 && cb >= 0) return false; // two labels that differ: different algorithms or values
  return a.slice(ca + 1) === b.slice(cb + 1);
}

/** The original response a revisit points at (same payload digest), if indexed. */
async function resolveRevisit(
  dir: string,
  rec: RecordAt,
  cap: Capture,
): Promise<{ at: Capture; rec: RecordAt } | null> {
  const target = targetUri(warcField(rec.headers, 'WARC-Refers-To-Target-URI')) ?? cap.url;
  const refDate = warcField(rec.headers, 'WARC-Refers-To-Date');
  const wantTs = refDate ? refDate.replace(/[^0-9]/g, '').slice(0, 14) : null;
  const caps = (await lookupUrl(dir, target)).filter(
    (c) => c.mime !== 'warc/revisit' && (!cap.digest || !c.digest || sameDigest(c.digest, cap.digest)),
  );
  // The dated original first, then the newest one not after the revisit.
  const revisitT = tsMillis(cap.timestamp);
  caps.sort((a, b) => {
    const ea = wantTs !== null && a.timestamp === wantTs ? 0 : 1;
    const eb = wantTs !== null && b.timestamp === wantTs ? 0 : 1;
    if (ea !== eb) return ea - eb;
    const la = tsMillis(a.timestamp) <= revisitT ? 0 : 1;
    const lb = tsMillis(b.timestamp) <= revisitT ? 0 : 1;
    if (la !== lb) return la - lb;
    return compareLines(b.timestamp, a.timestamp);
  });
  for (const c of caps) {
    const path = resolveIn(dir, c.filename);
    const r = path ? await readRecordAt(path, c.offset, c.length) : null;
    if (r && r.type !== 'revisit') return { at: c, rec: r };
  }
  return null;
}

/**
 * The stored response of `url` in the WARC files of `warcDir`: the capture nearest
 * to `timestamp` (14 digits or a prefix, or a Date), else the newest one, preferring
 * captures of exactly this URL over others with the same SURT key. A revisit's
 * payload comes from the original response it names (WARC-Refers-To-Target-URI and
 * -Date, same payload digest); its status and headers are the revisit's own. Null
 * when nothing readable is found.
 */
export async function getStoredResponse(
  warcDir: string,
  url: string,
  opts: { timestamp?: string | Date } = {},
): Promise<StoredResponse | null> {
  const caps = rank(await lookupUrl(warcDir, url), url, wantedMillis(opts.timestamp));
  for (const cap of caps) {
    const path = resolveIn(warcDir, cap.filename);
    const rec = path ? await readRecordAt(path, cap.offset, cap.length) : null;
    if (!rec) continue;
    const target = targetUri(warcField(rec.headers, 'WARC-Target-URI'));
    if (target !== undefined && target !== cap.url) continue; // stale index line
    const res: StoredResponse = {
      url: cap.url,
      timestamp: cap.timestamp,
      type: rec.type,
      status: 200,
      statusLine: 'HTTP/1.1 200 OK',
      headers: [],
      payload: rec.payload,
      filename: cap.filename,
      offset: cap.offset,
      length: cap.length,
      digest: cap.digest,
    };
    if (rec.httpStatusLine !== undefined) {
      res.statusLine = rec.httpStatusLine;
      res.status = statusOf(rec.httpStatusLine) ?? 0;
      res.headers = rec.httpHeaders ?? [];
    } else {
      const ct = warcField(rec.headers, 'Content-Type');
      res.headers = ct ? [['Content-Type', ct]] : [];
    }
    if (rec.type === 'revisit') {
      const orig = await resolveRevisit(warcDir, rec, cap);
      res.payload = orig ? orig.rec.payload : new Uint8Array(0);
      res.payloadFrom = orig
        ? { url: orig.at.url, timestamp: orig.at.timestamp, filename: orig.at.filename, offset: orig.at.offset, length: orig.at.length }
        : null;
      if (rec.httpStatusLine === undefined && orig?.rec.httpStatusLine !== undefined) {
        res.statusLine = orig.rec.httpStatusLine;
        res.status = statusOf(orig.rec.httpStatusLine) ?? 0;
        res.headers = orig.rec.httpHeaders ?? [];
      }
    }
    return res;
  }
  return null;
}

export interface WarcGetOptions {
  /** Directory of the WARC files. */
  dir: string;
  /** Write the HTTP status line and header fields before the body, as `curl -i` does. */
  headers?: boolean;
  /** Write to this file instead of stdout. */
  out?: string;
  /** Capture nearest to this time (14 digits or a prefix). */
  timestamp?: string;
}

function writeOut(stream: NodeJS.WritableStream, data: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/**
 * `ubicrawl warc get <url>`: writes the stored payload of `url` (the body as served,
 * after content decoding, byte for byte) to stdout or `out`. Exit code 0 when found,
 * 1 when no readable capture exists (or a revisit's original is missing), 2 when the
 * directory cannot be read or the output cannot be written.
 */
export async function runWarcGetCommand(url: string, opts: WarcGetOptions, io: CommandIO = process): Promise<number> {
  try {
    const st = await stat(opts.dir);
    if (!st.isDirectory()) throw new Error('not a directory');
    await readdir(opts.dir);
  } catch (e) {
    io.stderr.write(`${opts.dir}: ${(e as Error).message}\n`);
    return 2;
  }
  const res = await getStoredResponse(opts.dir, url, { timestamp: opts.timestamp });
  if (!res) {
    io.stderr.write(`${url}: no capture in ${opts.dir}\n`);
    return 1;
  }
  let data: Uint8Array = res.payload;
  if (opts.headers) {
    const head = [res.statusLine, ...res.headers.map(([k, v]) => `${k}: ${v}`)].join('\r\n') + '\r\n\r\n';
    data = Buffer.concat([Buffer.from(head, 'utf8'), res.payload]);
  }
  try {
    if (opts.out) await writeFile(opts.out, data);
    else await writeOut(io.stdout, data);
  } catch (e) {
    io.stderr.write(`${opts.out ?? 'stdout'}: ${(e as Error).message}\n`);
    return 2;
  }
  if (res.type === 'revisit' && !res.payloadFrom) {
    io.stderr.write(`${url}: capture ${res.timestamp} is a revisit whose original record was not found\n`);
    return 1;
  }
  return 0;
}

/** Index files up to this size are read whole; larger ones are binary-searched on disk. */
export const SMALL_INDEX_BYTES = SMALL_INDEX;
