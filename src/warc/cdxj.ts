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
//   digest: WARC-Payload-Digest as written, label included (`sha1:…`, `sha256:…`),
//   as cdxj-indexer copies it (its _get_digest; only its legacy CDX output strips
//   the label). Fields without a value are left out, as cdxj-indexer leaves them out.
import { rename, unlink, writeFile, stat, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { createHash } from 'node:crypto';
import { readWarc, splitHttp } from './reader.js';
import { gzipMembers } from './gzmembers.js';
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
  // Nearly every value (URL, digest, digits) is printable ASCII without `"` or `\`,
  // which both serialisers write as is.
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) { plain = false; break; }
  }
  if (plain) return '"' + s + '"';
  return JSON.stringify(s).replace(NON_ASCII, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** `<key> <timestamp> {"k": "v", …}` with Python json.dumps' separators. */
export function formatCdxjLine(urlkey: string, timestamp: string, fields: Array<[string, string]>): string {
  return `${openCdxjLine(urlkey, timestamp, fields)}}`;
}

/** formatCdxjLine without the closing brace (more fields may follow, see cdxjLineHead). */
function openCdxjLine(urlkey: string, timestamp: string, fields: Array<[string, string]>): string {
  let json = '{';
  for (let i = 0; i < fields.length; i++) {
    if (i) json += ', ';
    json += pyJsonString(fields[i][0]) + ': ' + pyJsonString(fields[i][1]);
  }
  return `${urlkey} ${timestamp} ${json}`;
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

/** What a CDXJ line needs from one record, however it was read. */
export interface RecordView {
  /** WARC-Type. */
  type: string;
  /** A WARC named field by case-insensitive name (the first one if repeated). */
  field(name: string): string | undefined;
  /** For application/http blocks: the HTTP status line and the first Content-Type. */
  httpStatusLine?: string;
  httpContentType?: string;
  /** The payload, for computing a missing WARC-Payload-Digest. */
  payload(): Uint8Array | undefined;
  offset: number;
  length: number;
}

/** WARC/1.0 writers sometimes wrapped the target URI in angle brackets. */
export function targetUri(v: string | undefined): string | undefined {
  if (!v) return v;
  const t = v.trim();
  return t.length > 1 && t[0] === '<' && t[t.length - 1] === '>' ? t.slice(1, -1) : t;
}

/**
 * The CDXJ line of one record, or null when the record is not indexed (request,
 * warcinfo, warc-fields metadata, …) or cannot be (no target URI or date).
 * `skipped` is set when an indexable record lacked what a line needs.
 */
export function cdxjLineOf(r: RecordView, filename: string): { line: string | null; skipped: boolean } {
  const f = cdxjFieldsOf(r);
  if (!f.fields) return { line: null, skipped: f.skipped };
  f.fields.push(['offset', String(r.offset)], ['filename', filename]);
  return { line: formatCdxjLine(f.urlkey, f.ts, f.fields), skipped: false };
}

/** cdxjLineOf's key, timestamp and fields up to `length` (offset and filename follow). */
function cdxjFieldsOf(r: RecordView): { urlkey: string; ts: string; fields: Array<[string, string]> | null; skipped: boolean } {
  const none = (skipped: boolean) => ({ urlkey: '', ts: '', fields: null, skipped });
  if (!INDEXED_TYPES.has(r.type)) return none(false);
  const ctype = r.field('Content-Type');
  if ((r.type === 'resource' || r.type === 'metadata') && ctype && /^\s*application\/warc-fields\b/i.test(ctype))
    return none(false);
  const url = targetUri(r.field('WARC-Target-URI'));
  const ts = cdxjTimestamp(r.field('WARC-Date'));
  if (!url || !ts) return none(true);
  const fields: Array<[string, string]> = [['url', url]];
  let mime: string | undefined;
  if (r.type === 'revisit') mime = 'warc/revisit';
  else if (r.type === 'response') mime = r.httpContentType;
  else mime = ctype;
  if (mime) {
    const m = mime.trim().split(MIME_SPLIT, 1)[0].trim();
    if (m) fields.push(['mime', m]);
  }
  if ((r.type === 'response' || r.type === 'revisit') && r.httpStatusLine) {
    const code = r.httpStatusLine.trim().split(/\s+/)[1];
    if (code && /^\d{3}$/.test(code)) fields.push(['status', code]);
  }
  let digest = r.field('WARC-Payload-Digest');
  if (!digest) {
    // cdxj-indexer computes a missing digest the way warcio writes one: sha1, base32.
    const payload = r.payload();
    if (payload) digest = 'sha1:' + base32(createHash('sha1').update(payload).digest());
  }
  if (digest) fields.push(['digest', digest.trim()]);
  fields.push(['length', String(r.length)]);
  return { urlkey: surt(url), ts, fields, skipped: false };
}

/**
 * The CDXJ line of the one record in an uncompressed gzip member `raw` whose
 * compressed size is `length`, without its offset and file name (known only
 * when the member is appended): the line is `head + cdxjLineTail(offset,
 * filename)`, byte-equal to what buildCdxj() makes of the written file — it is
 * the same code over the same bytes (LeanRecord, cdxjLineOf). The WARC encoder
 * calls this as it writes each record, so a file's index is not rebuilt by
 * inflating the file again when it closes (≈ 60 µs a page; docs/performance.md).
 * Null when the record is not indexed; undefined when the member is not exactly
 * one whole record (the caller must then index the file from disk).
 */
export function cdxjLineHead(raw: Uint8Array, length: number): string | null | undefined {
  const data = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  let head: string | null | undefined;
  let n = 0;
  for (const r of membersRecords(data, 0, length)) {
    if (r === 'bad' || ++n > 1) return undefined;
    const f = cdxjFieldsOf(r);
    head = f.fields ? openCdxjLine(f.urlkey, f.ts, f.fields) : null;
  }
  return n === 1 ? head : undefined;
}

/** The end of a line begun by cdxjLineHead. */
export function cdxjLineTail(offset: number, filename: string): string {
  return ', ' + pyJsonString('offset') + ': ' + pyJsonString(String(offset)) + ', ' + pyJsonString('filename') + ': ' + pyJsonString(filename) + '}';
}

/** cdxjLineOf() for an entry of readWarc(). */
export function cdxjLineFor(e: WarcEntry, filename: string): { line: string | null; skipped: boolean } {
  const lower = new Map<string, string>();
  for (const k in e.headers) if (!lower.has(k.toLowerCase())) lower.set(k.toLowerCase(), e.headers[k]);
  let httpContentType: string | undefined;
  for (const [k, v] of e.httpHeaders ?? []) {
    if (k.toLowerCase() === 'content-type') {
      httpContentType = v;
      break;
    }
  }
  return cdxjLineOf(
    {
      type: e.type,
      field: (n) => lower.get(n.toLowerCase()),
      httpStatusLine: e.httpStatusLine,
      httpContentType,
      payload: () => e.payload,
      offset: e.offset,
      length: e.length,
    },
    filename,
  );
}

// ---------------------------------------------------------------------------
// Lean record reader for .warc.gz. readWarc() runs warcio's parser on every record
// (about 70 µs a page on top of inflating it); an index needs only the WARC header
// block and the HTTP status line and Content-Type, so this reads just those from
// each inflated gzip member. Framing follows WARC/1.1 §4: version line, named
// fields, CRLF, Content-Length bytes of block, CRLF CRLF.

const CRLFCRLF = Buffer.from('\r\n\r\n');
const WARC_MAGIC = Buffer.from('WARC/');
const HTTP_CT = /^application\/http\b/i;

class LeanRecord implements RecordView {
  type = '';
  httpStatusLine?: string;
  httpContentType?: string;
  constructor(
    private readonly fields: Map<string, string>,
    private readonly block: Buffer,
    readonly offset: number,
    readonly length: number,
  ) {
    this.type = fields.get('warc-type') ?? '';
    if (HTTP_CT.test((fields.get('content-type') ?? '').trim())) {
      const end = block.indexOf(CRLFCRLF);
      const head = block.toString('utf8', 0, end >= 0 ? end : Math.min(block.length, 65536));
      const lines = head.split('\r\n');
      this.httpStatusLine = lines[0];
      for (let i = 1; i < lines.length; i++) {
        const c = lines[i].indexOf(':');
        if (c > 0 && lines[i].slice(0, c).trim().toLowerCase() === 'content-type') {
          this.httpContentType = lines[i].slice(c + 1).trim();
          break;
        }
      }
    }
  }

  field(name: string): string | undefined {
    return this.fields.get(name.toLowerCase());
  }

  payload(): Uint8Array | undefined {
    if (this.httpStatusLine === undefined) return this.block;
    return splitHttp(this.block)?.payload ?? this.block;
  }
}

/** The records of one inflated member; 'bad' when what follows is not a whole record. */
function* membersRecords(data: Buffer, offset: number, length: number): Generator<LeanRecord | 'bad'> {
  let p = 0;
  for (;;) {
    while (p < data.length && (data[p] === 13 || data[p] === 10)) p++;
    if (p >= data.length) return;
    if (data.compare(WARC_MAGIC, 0, WARC_MAGIC.length, p, p + WARC_MAGIC.length) !== 0) {
      yield 'bad';
      return;
    }
    const hend = data.indexOf(CRLFCRLF, p);
    if (hend < 0) {
      yield 'bad';
      return;
    }
    const lines = data.toString('utf8', p, hend).split('\r\n');
    const fields = new Map<string, string>();
    let last = '';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i];
      if ((line[0] === ' ' || line[0] === '\t') && last) {
        // Folded continuation of the previous field.
        if (fields.get(last) !== undefined) fields.set(last, `${fields.get(last)} ${line.trim()}`);
        continue;
      }
      const c = line.indexOf(':');
      if (c <= 0) continue;
      const name = line.slice(0, c).trim().toLowerCase();
      last = fields.has(name) ? '' : name;
      if (!fields.has(name)) fields.set(name, line.slice(c + 1).trim());
    }
    const cl = Number(fields.get('content-length'));
    const start = hend + 4;
    if (!Number.isSafeInteger(cl) || cl < 0 || start + cl > data.length) {
      yield 'bad';
      return;
    }
    yield new LeanRecord(fields, data.subarray(start, start + cl), offset, length);
    p = start + cl;
  }
}

/** Plain code-unit order: our lines are ASCII, so this is byte order (`LC_ALL=C sort`). */
export function compareLines(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const YIELD_EVERY = 256;
const GZ_NAME = /\.gz(\.open)?$/i;

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
  const add = async (r: { line: string | null; skipped: boolean }) => {
    out.records++;
    if (r.line) out.lines.push(r.line);
    else if (r.skipped) out.skipped++;
    if (out.records % YIELD_EVERY === 0) await new Promise<void>((res) => setImmediate(res));
  };
  if (GZ_NAME.test(path)) {
    // As readWarc(): a member that does not hold whole records is skipped and reported.
    let bad = false;
    for await (const m of gzipMembers(path, onEnd)) {
      for (const r of membersRecords(m.data, m.offset, m.length)) {
        if (r === 'bad') {
          bad = true;
          break;
        }
        await add(cdxjLineOf(r, filename));
      }
    }
    if (bad && !out.problem) out.problem = 'corrupt';
  } else {
    for await (const e of readWarc(path, { payload: true, onEnd })) await add(cdxjLineFor(e, filename));
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
 * an index). Returns the index path. Meant for WarcWriter's onFileClosed hook: with
 * the `lines` the writer collected (collectCdxj) the file is not read again.
 */
export async function indexWarcFile(path: string, lines?: string[]): Promise<string> {
  // `lines`: the file's lines as its writer made them (WarcWriter's collectCdxj), in any order.
  const sorted = lines ? lines.sort(compareLines) : (await buildCdxj(path)).lines;
  const target = cdxjPathFor(path);
  await writeAtomically(target, render(sorted));
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
