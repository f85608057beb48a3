// Reading WARC files back: records with their file offsets, and digest verification.
// Records are parsed by warcio's WARCParser. For .warc.gz the gzip members are found
// with native zlib first (gzmembers.ts): that gives each record's exact offset and
// compressed length (what a CDXJ line stores) and lets a file cut short by a crash
// yield every whole record and then stop, instead of failing inside the inflater.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { AsyncIterReader, WARCParser } from 'warcio';
import type { WARCRecord } from 'warcio';
import { gzipMembers } from './gzmembers.js';
import type { GzTail } from './gzmembers.js';
import { digestMatches } from './digest.js';

export interface WarcEntry {
  /** WARC-Type. */
  type: string;
  /** WARC named fields; a repeated field's values are joined with ", ". */
  headers: Record<string, string>;
  /** Offset of the record's gzip member (or of the record, uncompressed) in the file. */
  offset: number;
  /** Length of that member (or record) in the file. */
  length: number;
  /**
   * For application/http records (request, response, revisit): the entity body, with
   * any chunked transfer coding removed. For other records: the whole block.
   */
  payload?: Uint8Array;
  /** The whole record block (WARC/1.1 §4), when `block: true` was asked for. */
  block?: Uint8Array;
  httpStatusLine?: string;
  httpHeaders?: [string, string][];
}

export interface ReadOptions {
  /** Attach `payload` (default true). */
  payload?: boolean;
  /** Attach `block` (default false). */
  block?: boolean;
  /** Where reading stopped and why (truncated or corrupt tail), called once at the end. */
  onEnd?: (tail: { end: number; size: number; problem: null | 'truncated' | 'corrupt' }) => void;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

function warcHeaders(rec: WARCRecord): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of rec.warcHeaders.headers) out[k] = k in out ? `${out[k]}, ${v}` : v;
  return out;
}

function isHttpBlock(contentType: string | undefined): boolean {
  return !!contentType && /^application\/http\b/i.test(contentType.trim());
}

/** RFC 9112 §7.1 chunked decoding; null when the body is not well-formed chunked data. */
export function dechunk(body: Uint8Array): Uint8Array | null {
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const parts: Buffer[] = [];
  let p = 0;
  for (;;) {
    const eol = b.indexOf('\r\n', p);
    if (eol < 0) return null;
    const size = parseInt(b.toString('latin1', p, eol).split(';')[0].trim(), 16);
    if (!Number.isFinite(size) || size < 0) return null;
    p = eol + 2;
    if (size === 0) return Buffer.concat(parts);
    if (p + size > b.length) return null;
    parts.push(b.subarray(p, p + size));
    p += size + 2;
  }
}

interface HttpParts {
  statusLine: string;
  headers: [string, string][];
  payload: Uint8Array;
}

/** Splits an application/http block into status line, header fields and entity body. */
export function splitHttp(block: Uint8Array): HttpParts | null {
  const b = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
  const end = b.indexOf(CRLFCRLF);
  if (end < 0) return null;
  const lines = b.toString('utf8', 0, end).split('\r\n');
  const headers: [string, string][] = [];
  let chunked = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const c = line.indexOf(':');
    if (c <= 0) continue;
    const name = line.slice(0, c).trim();
    const value = line.slice(c + 1).trim();
    if (name.toLowerCase() === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
    headers.push([name, value]);
  }
  let payload: Uint8Array = b.subarray(end + 4);
  if (chunked) payload = dechunk(payload) ?? payload;
  return { statusLine: lines[0], headers, payload };
}

async function toEntry(rec: WARCRecord, offset: number, length: number, opts: ReadOptions): Promise<WarcEntry | null> {
  const headers = warcHeaders(rec);
  const declared = rec.warcContentLength;
  const block = await rec.readFully(false);
  // A record whose block is shorter than its Content-Length was cut off: not whole.
  if (!Number.isFinite(declared) || block.length < declared) return null;
  const entry: WarcEntry = { type: rec.warcType ?? '', headers, offset, length };
  if (opts.block) entry.block = block;
  const http = isHttpBlock(rec.warcContentType ?? undefined) ? splitHttp(block) : null;
  if (http) {
    entry.httpStatusLine = http.statusLine;
    entry.httpHeaders = http.headers;
  }
  if (opts.payload !== false) entry.payload = http ? http.payload : block;
  return entry;
}

/**
 * Every whole record of a .warc.gz (one or more records per gzip member) or .warc
 * file, in order. A truncated or corrupt tail ends the iteration without throwing.
 */
export async function* readWarc(path: string, opts: ReadOptions = {}): AsyncGenerator<WarcEntry> {
  if (/\.gz(\.open)?$/i.test(path)) {
    let tail: GzTail = { end: 0, size: 0, problem: null };
    for await (const m of gzipMembers(path, (t) => (tail = t))) {
      const parser = new WARCParser(new AsyncIterReader([m.data], null), { keepHeadersCase: true, parseHttp: false });
      for await (const rec of parser) {
        const e = await toEntry(rec, m.offset, m.length, opts);
        if (!e) {
          tail = { ...tail, problem: 'corrupt' };
          break;
        }
        yield e;
      }
    }
    opts.onEnd?.(tail);
    return;
  }
  // Uncompressed: a record's length is only known when the next one starts, so each
  // entry is yielded one step late (the last one runs to the end of the file).
  const size = (await stat(path)).size;
  const parser = new WARCParser(createReadStream(path), { keepHeadersCase: true, parseHttp: false });
  let pending: WarcEntry | null = null;
  let problem: GzTail['problem'] = null;
  try {
    for await (const rec of parser) {
      const offset = parser.offset;
      if (pending) {
        pending.length = offset - pending.offset;
        yield pending;
        pending = null;
      }
      const e = await toEntry(rec, offset, 0, opts);
      if (!e) {
        problem = 'truncated';
        break;
      }
      pending = e;
    }
  } catch {
    problem = 'corrupt';
  }
  let end = 0;
  if (pending) {
    // Whole record; its length is unknown (0) only if what follows it is damaged.
    pending.length = problem ? 0 : size - pending.offset;
    end = problem ? pending.offset : size;
    yield pending;
  }
  opts.onEnd?.({ end, size, problem });
}

export interface VerifyResult {
  records: number;
  responses: number;
  /** Digests (block and payload) recomputed and found equal. */
  digestsOk: number;
  /** One line per digest that did not verify, or a record/file that could not be read. */
  digestErrors: string[];
}

/**
 * Recomputes WARC-Block-Digest over each block and WARC-Payload-Digest over each
 * payload (WARC/1.1 §5.8, §5.9; any algorithm/encoding digest.ts parses). A revisit's
 * payload digest names the original payload, which is not in the record, so it is
 * not recomputed. A truncated or corrupt file tail is reported as an error.
 */
export async function verifyWarc(path: string): Promise<VerifyResult> {
  const res: VerifyResult = { records: 0, responses: 0, digestsOk: 0, digestErrors: [] };
  let tail: { end: number; size: number; problem: null | 'truncated' | 'corrupt' } | null = null;
  try {
    for await (const e of readWarc(path, { block: true, payload: true, onEnd: (t) => (tail = t) })) {
      res.records++;
      if (e.type === 'response') res.responses++;
      const where = `@${e.offset} ${e.type} ${e.headers['WARC-Target-URI'] ?? ''}`.trimEnd();
      const bd = e.headers['WARC-Block-Digest'];
      if (bd) {
        if (digestMatches(bd, e.block!)) res.digestsOk++;
        else res.digestErrors.push(`${where}: WARC-Block-Digest mismatch (${bd})`);
      }
      const pd = e.headers['WARC-Payload-Digest'];
      if (pd && e.type !== 'revisit') {
        if (digestMatches(pd, e.payload!)) res.digestsOk++;
        else res.digestErrors.push(`${where}: WARC-Payload-Digest mismatch (${pd})`);
      }
    }
  } catch (err) {
    res.digestErrors.push(`read error: ${(err as Error).message}`);
  }
  const t = tail as { end: number; size: number; problem: null | 'truncated' | 'corrupt' } | null;
  if (t && t.problem) res.digestErrors.push(`${t.problem} data at offset ${t.end} of ${t.size}`);
  return res;
}
