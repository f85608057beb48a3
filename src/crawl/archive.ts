// The crawl's WARC files (docs/warc.md): one writer, the records a fetched page
// makes (response + request, a revisit of an exact duplicate or of a 304, a
// near-duplicate's metadata record), the CDXJ index of every closed file.
// A failed write is counted, fatal, and thrown on: a page must not be
// acknowledged unrecorded (docs/storage.md "Write failures").
import { join } from 'node:path';
import { INLINE_PAGES_BEFORE_THREADS, type AgentConfig } from '../config.js';
import { archivedBody, type FetchResponse } from '../fetch/fetcher.js';
import { WarcWriter, type ConversionInput, type WriteResult } from '../warc/writer.js';
import { warcinfoFields } from '../warc/warcinfo.js';
import { indexWarcFile } from '../warc/cdxj.js';
import { serverNotModifiedRevisit } from '../warc/notmodified.js';
import { revisitFor, type ExactCheck } from '../dedup/content.js';
import type { DigestRecord } from '../dedup/digests.js';
import { bump, type CrawlStats } from './stats.js';
import { errorText } from './errors.js';
import type { Logger } from '../util/log.js';
import type { HelperThread } from '../util/helper-thread.js';
import { SOFTWARE } from '../version.js';

export interface ArchiveComponents {
  config: Pick<AgentConfig, 'warc' | 'dataDir' | 'userAgent' | 'mesh' | 'dedup' | 'recrawl'>;
  stats: Pick<CrawlStats, 'warcRecords' | 'errors'>;
  log: Logger;
  onFatal(err: Error): void;
  /** The worker thread records are encoded on, shared with the fingerprints (default: the writer's own). */
  thread?: HelperThread;
}

export class Archive {
  /** CDXJ indexing of closed WARC files still running. */
  private readonly pendingIndexes = new Set<Promise<void>>();
  private warc: WarcWriter | undefined;

  constructor(private readonly c: ArchiveComponents) {}

  /** Opens the writer (recovering files a crash left open), or nothing with `--no-warc`; `agentShortId` names the files. */
  async open(agentShortId: string): Promise<void> {
    const { config } = this.c;
    if (!config.warc.enabled) return;
    this.warc = await WarcWriter.open({
      dir: join(config.dataDir, 'warc'),
      prefix: config.warc.prefix,
      agentShortId,
      maxFileBytes: config.warc.maxFileBytes,
      // Records encoded here before the encoder thread starts (a small crawl never starts it).
      inlineFirst: INLINE_PAGES_BEFORE_THREADS,
      ...(this.c.thread ? { thread: this.c.thread } : {}),
      // Each finished (or recovered) WARC gets its CDXJ index next to it.
      onFileClosed: (path: string, lines?: string[]) => this.indexLater(path, lines),
      collectCdxj: true,
      fsyncIntervalMs: config.warc.fsyncIntervalMs,
      // A file whose index write failed (disk full) is indexed at the next start.
      indexMissing: true,
      digest: config.warc.digest,
      warcinfo: warcinfoFields({
        software: SOFTWARE, userAgent: config.userAgent, operator: config.warc.operator,
        crawlId: config.mesh.crawlId, description: config.warc.description, digest: config.warc.digest,
        exactDedup: config.dedup.enabled, nearDedup: config.dedup.near, maxDistance: config.dedup.maxDistance,
        recrawl: config.recrawl.enabled,
      }),
    });
  }

  /** Where the WARC files are, or undefined with `--no-warc`. */
  get dir(): string | undefined { return this.warc ? join(this.c.config.dataDir, 'warc') : undefined; }

  /** Records are written (false with `--no-warc`: every write returns undefined). */
  get enabled(): boolean { return this.warc !== undefined; }

  /** A response and its request; `pre`: the record id and payload digest dedup fixed already. */
  async writeExchange(out: FetchResponse, pre?: { recordId: string; digest: string }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    if (!warc) return undefined;
    return this.write(2, () => warc.writeExchange({
      url: out.url,
      date: out.startedAt,
      ip: out.ip,
      method: out.method,
      requestHeaders: out.requestHeaders,
      status: out.status,
      statusText: out.statusText,
      responseHeaders: out.responseHeaders,
      ...archivedBody(out),
      ...(pre ? { recordId: pre.recordId, payloadDigest: pre.digest } : {}),
    }));
  }

  /** A 304 to a revisit: a server-not-modified revisit record (WARC/1.1 §6.7.3). */
  async writeNotModified(out: FetchResponse, earlier: { capturedAt: Date; payloadDigest?: string }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    if (!warc) return undefined;
    return this.write(1, () => warc.writeRevisit(serverNotModifiedRevisit({
      url: out.url, date: out.startedAt, ip: out.ip, status: out.status, statusText: out.statusText,
      responseHeaders: out.responseHeaders, ...earlier, ...(out.wire ? { wire: out.wire } : {}),
    })));
  }

  /** An exact duplicate: a revisit record naming the first capture (WARC/1.1 §6.7.2). */
  async writeRevisit(out: FetchResponse, exact: ExactCheck & { original: DigestRecord }): Promise<WriteResult | undefined> {
    const warc = this.warc;
    return warc ? this.write(1, () => warc.writeRevisit(revisitFor(out, exact))) : undefined;
  }

  /** A metadata record about a capture (a near-duplicate's fields). */
  async writeMetadata(url: string, date: Date, fields: Record<string, string> | [string, string][], concurrentTo?: string, protocols?: string[]): Promise<WriteResult | undefined> {
    const warc = this.warc;
    return warc ? this.write(1, () => warc.writeMetadata(url, date, fields, concurrentTo, protocols)) : undefined;
  }

  /** The rendered DOM of a page, referring to its response record (docs/warc.md "Rendered pages"). */
  async writeConversion(cv: ConversionInput): Promise<WriteResult | undefined> {
    const warc = this.warc;
    return warc ? this.write(1, () => warc.writeConversion(cv)) : undefined;
  }

  /** Closes the current file and waits for every index. */
  async close(): Promise<void> {
    await this.warc?.close().catch((err: Error) => this.c.log.error({ err: err.message }, 'WARC close failed'));
    await Promise.all([...this.pendingIndexes]);
  }

  /** Closes after a start that failed (nothing to report). */
  async abandon(): Promise<void> {
    await this.warc?.close().catch(() => {});
  }

  /** One WARC write: `records` counted when it lands; a failure is counted, fatal, and thrown on. */
  private async write<T>(records: number, write: () => Promise<T>): Promise<T> {
    try {
      const result = await write();
      this.c.stats.warcRecords += records;
      return result;
    } catch (err) {
      bump(this.c.stats.errors, 'warc');
      const failure = new Error(`WARC write failed: ${errorText(err)}`);
      this.c.onFatal(failure);
      throw failure;
    }
  }

  private indexLater(path: string, lines?: string[]): void {
    const job: Promise<void> = indexWarcFile(path, lines).then(() => undefined, (err: Error) => {
      bump(this.c.stats.errors, 'cdxj');
      this.c.log.error({ path, err: err.message }, 'CDXJ indexing failed');
    }).finally(() => this.pendingIndexes.delete(job));
    this.pendingIndexes.add(job);
  }
}
