// Records each page's outlinks (docs/graph.md): a WARC `metadata` record per page with
// Heritrix's `outlink:` fields, concurrent to the page's response record, and a line
// in this agent's edge file. The crawl calls page() / redirect() where a page's links
// are known; nothing here blocks the page: writes are tracked and awaited by close().
// A failed write is counted and reported through onError, never thrown at the crawl.
import { join } from 'node:path';
import type { ExtractedLink } from '../parse/html.js';
import { EdgeFileWriter } from './edges.js';
import { outlinkFields, pageOutlinks, redirectOutlink, type Outlink } from './outlinks.js';

export type MetadataWrite = (url: string, date: Date, fields: [string, string][], concurrentTo?: string, protocols?: string[]) => Promise<unknown>;

/** The capture a page's outlinks belong to: its fetch time, its response record, its WARC-Protocol values. */
export interface CaptureRef {
  date: Date;
  recordId?: string;
  protocols?: string[];
}

/** The capture of a fetch: its time, the response record written for it, the protocols of its exchange (http/1.1 when not captured, as the response's). */
export function captureRef(out: { startedAt: Date; wire?: { protocols?: string[] } }, stored?: { recordId: string }): CaptureRef {
  const protocols = out.wire?.protocols?.length ? out.wire.protocols : ['http/1.1'];
  return { date: out.startedAt, protocols, ...(stored ? { recordId: stored.recordId } : {}) };
}

export interface LinkGraphOptions {
  /** The data dir: edge files go to `<dataDir>/graph/`. */
  dataDir: string;
  agentShortId: string;
  /** Writes the WARC metadata record (absent: WARC output is off, only the edge file is written). */
  writeMetadata?: MetadataWrite;
  /** The crawler's form of a normalised URL (session ids stripped, src/scope/traps.ts), so nodes are named as crawled. */
  rewrite?: (url: string) => string;
  onError?: (err: Error) => void;
}

export interface LinkGraphStats {
  pages: number;
  arcs: number;
  metadataRecords: number;
  errors: number;
}

export class LinkGraphRecorder {
  readonly stats: LinkGraphStats = { pages: 0, arcs: 0, metadataRecords: 0, errors: 0 };
  private readonly pending = new Set<Promise<void>>();

  private constructor(private readonly edges: EdgeFileWriter, private readonly o: LinkGraphOptions) {}

  static async open(o: LinkGraphOptions): Promise<LinkGraphRecorder> {
    let rec: LinkGraphRecorder | null = null;
    const edges = await EdgeFileWriter.open({ dir: join(o.dataDir, 'graph'), agentShortId: o.agentShortId, onError: (err) => rec?.fail(err) });
    rec = new LinkGraphRecorder(edges, o);
    return rec;
  }

  get edgeFile(): string { return this.edges.path; }

  /** An HTML page's links as the parser returned them (before any scope filter). */
  page(url: string, at: CaptureRef, links: readonly ExtractedLink[]): void {
    const rewrite = this.o.rewrite;
    let outlinks = pageOutlinks(url, links);
    if (rewrite) outlinks = dedupe(url, outlinks.map((l) => ({ ...l, url: rewrite(l.url) })));
    this.record(url, at, outlinks);
  }

  /** A redirect: its Location is the one outlink (Heritrix's hop R, context "Location:"). */
  redirect(url: string, at: CaptureRef, location: string): void {
    const link = redirectOutlink(url, location);
    const rewritten = link && this.o.rewrite ? { ...link, url: this.o.rewrite(link.url) } : link;
    this.record(url, at, rewritten && rewritten.url !== url ? [rewritten] : []);
  }

  private record(url: string, at: CaptureRef, outlinks: Outlink[]): void {
    this.stats.pages++;
    this.stats.arcs += outlinks.length;
    // Every page is a node, with or without outlinks.
    this.edges.add(url, outlinks);
    const write = this.o.writeMetadata;
    if (!write || outlinks.length === 0) return;
    const job = write(url, at.date, outlinkFields(outlinks), at.recordId, at.protocols).then(
      () => { this.stats.metadataRecords++; },
      (err: unknown) => this.fail(err),
    ).finally(() => this.pending.delete(job));
    this.pending.add(job);
  }

  private fail(err: unknown): void {
    this.stats.errors++;
    this.o.onError?.(err instanceof Error ? err : new Error(String(err)));
  }

  /** Waits for the metadata writes begun, then flushes and closes the edge file. Call before the WARC writer closes. */
  async close(): Promise<void> {
    await Promise.all([...this.pending]);
    await this.edges.close().catch((err: unknown) => this.fail(err));
  }
}

function dedupe(source: string, outlinks: Outlink[]): Outlink[] {
  const seen = new Set<string>([source]);
  return outlinks.filter((l) => (seen.has(l.url) ? false : (seen.add(l.url), true)));
}
