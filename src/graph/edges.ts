// The per-agent edge file (docs/graph.md "Edge files"): one line per page,
//   SOURCE TAB HOP URL SP HOP URL …  LF
// where HOP is Heritrix's one-letter hop type glued to the target URL. Serialised URLs
// never hold a space, tab or line break (WHATWG URL serialisation percent-encodes
// them), so the line needs no escaping. Lines are buffered and appended as gzip
// members (RFC 1952 §2.2: a file of members is one gzip stream to `zcat`), so a
// crash loses at most the unflushed buffer and a torn last member; readers keep
// everything before it.
import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync, gunzipSync, constants as zconst } from 'node:zlib';
import type { HopType, Outlink } from './outlinks.js';
import { findFiles } from '../util/find-files.js';

export const EDGE_FILE_SUFFIX = '.edges.gz';

export interface EdgeFileOptions {
  /** Directory of the edge files (created if missing), normally `<data-dir>/graph`. */
  dir: string;
  agentShortId: string;
  /** Append when this much text is buffered (default 256 KiB). */
  flushBytes?: number;
  /** Append at least this often, ms (default 2000; 0: only at flushBytes and close). */
  flushIntervalMs?: number;
  /** A background append failed (the lines of that member are lost; later appends fail too). */
  onError?: (err: Error) => void;
}

function safePart(s: string): string {
  return String(s).replace(/[^A-Za-z0-9._]/g, '_') || '_';
}

/** One line of the edge file. */
export function edgeLine(source: string, outlinks: readonly Outlink[]): string {
  let s = source + '\t';
  for (let i = 0; i < outlinks.length; i++) s += (i === 0 ? '' : ' ') + outlinks[i]!.hop + outlinks[i]!.url;
  return s + '\n';
}

export interface EdgeRecord {
  source: string;
  targets: Array<{ hop: HopType; url: string }>;
}

/** Parses one line (without its LF); null when it is not an edge line. */
export function parseEdgeLine(line: string): EdgeRecord | null {
  const tab = line.indexOf('\t');
  if (tab <= 0) return null;
  const source = line.slice(0, tab);
  const targets: EdgeRecord['targets'] = [];
  const rest = line.slice(tab + 1);
  if (rest.length > 0) {
    for (const f of rest.split(' ')) {
      if (f.length < 2) continue;
      targets.push({ hop: f[0] as HopType, url: f.slice(1) });
    }
  }
  return { source, targets };
}

/**
 * Appends a page's outlinks to this run's edge file. A new file per run
 * (`edges-<agent>-<UTC time>.edges.gz`), so a torn member of a crashed run is never
 * followed by more members.
 */
export class EdgeFileWriter {
  private buf: string[] = [];
  private bufChars = 0;
  private fh: FileHandle | null = null;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private failure: Error | null = null;
  readonly path: string;
  private readonly flushBytes: number;

  private constructor(path: string, flushBytes: number, intervalMs: number, private readonly onError?: (err: Error) => void) {
    this.path = path;
    this.flushBytes = flushBytes;
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.background(), intervalMs);
      this.timer.unref();
    }
  }

  static async open(o: EdgeFileOptions): Promise<EdgeFileWriter> {
    await mkdir(o.dir, { recursive: true });
    const stamp = new Date().toISOString().replace(/[^0-9]/g, '').slice(0, 17);
    const path = join(o.dir, `edges-${safePart(o.agentShortId)}-${stamp}${EDGE_FILE_SUFFIX}`);
    return new EdgeFileWriter(path, o.flushBytes ?? 256 * 1024, o.flushIntervalMs ?? 2000, o.onError);
  }

  add(source: string, outlinks: readonly Outlink[]): void {
    if (this.closed) return;
    const line = edgeLine(source, outlinks);
    this.buf.push(line);
    this.bufChars += line.length;
    if (this.bufChars >= this.flushBytes) this.background();
  }

  /** A flush nobody awaits: its failure is reported once, not left unhandled. */
  private background(): void {
    const reported = this.failure !== null;
    this.flush().catch((err: Error) => { if (!reported) this.onError?.(err); });
  }

  /** Appends the buffered lines as one gzip member; rejects with the first write error. */
  flush(): Promise<void> {
    if (this.buf.length === 0) return this.chain;
    const text = this.buf.join('');
    this.buf = [];
    this.bufChars = 0;
    this.chain = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      try {
        this.fh ??= await open(this.path, 'a');
        await this.fh.appendFile(gzipSync(Buffer.from(text, 'utf8'), { level: 4 }));
      } catch (err) {
        this.failure = err as Error;
        throw err;
      }
    });
    return this.chain;
  }

  async close(): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    try {
      await this.flush();
    } finally {
      await this.fh?.sync().catch(() => {});
      await this.fh?.close().catch(() => {});
      this.fh = null;
    }
  }
}

/** The text of an edge file: every complete line (a torn last member or line is dropped). */
export function readEdgeFile(path: string): string[] {
  const raw = readFileSync(path);
  // Z_SYNC_FLUSH: a truncated last member yields what it holds instead of an error.
  const text = gunzipSync(raw, { finishFlush: zconst.Z_SYNC_FLUSH }).toString('utf8');
  const end = text.lastIndexOf('\n');
  return end < 0 ? [] : text.slice(0, end).split('\n');
}

/** Edge files under `dir`: the directory itself, its `graph/` subdirectory, one level deeper (a dir of data dirs). */
export async function findEdgeFiles(dir: string): Promise<string[]> {
  return (await findFiles(dir, { match: (name) => name.endsWith(EDGE_FILE_SUFFIX) })).sort();
}
