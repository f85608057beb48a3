// Content dedup in the crawl pipeline (docs/warc.md "Duplicates in the crawl"): what the agent asks
// about each fetched page, and the WARC records it writes as a consequence.
//
// 1. Exact duplicates. The payload digest of a 200 response (the same
//    `sha1:`/`sha256:BASE32` the WARC writer puts in WARC-Payload-Digest,
//    computed once here over the payload as stored, and handed to the writer)
//    is looked up in the `digests` sublevel. Keys carry their label, so a data
//    dir crawled with one `--warc-digest` and resumed with the other never
//    matches across algorithms (docs/warc.md "Digests"). A payload first archived under another URL makes this capture
//    a `revisit` record, profile identical-payload-digest, with
//    WARC-Refers-To-Target-URI / -Date / WARC-Refers-To naming the original
//    (WARC/1.1 §6.7.2), and its links are not extracted again: identical bytes
//    hold identical links (only relative links resolve differently — those
//    are lost, see docs/warc.md).
// 2. Near duplicates. The visible text of other HTML pages is fingerprinted
//    with simhash64 and looked up in the permuted-table index (Manku, Jain,
//    Das Sarma 2007, §3); a fingerprint within `maxDistance` bits of an
//    earlier page's is recorded (fetch record, WARC metadata record) but the
//    page is kept and its links are followed: it is a different page.
//
// Concurrency. Pages are processed concurrently, and an index read does not
// see a write that is not yet durable. So every claim (a digest's first
// capture, a fingerprint) is also kept in memory from the moment it is
// decided until it is durable *and* every read issued before then has
// finished (a `Fence`); a decision is made synchronously when its store read
// returns, against the store's answer and the in-memory claims together. Two
// identical pages fetched at the same moment are thus one response and one
// revisit, never two responses.
//
// Durability (docs/storage.md): the digest entry goes into the page's own
// completion batch (`ExactCheck.ops`), after its WARC response record is
// written, so an entry never names a record that is not in a WARC file. The
// fingerprint is written by SimhashStore in its own batched round, and the
// agent waits for it (`NearCheck.indexed`) before completing the page, so a
// page marked fetched is always indexed; a page killed before that is
// fetched again and indexed then (adding the same (fingerprint, URL) twice is
// a no-op).
import type { BatchOp, Sublevel } from '../store/db.js';
import { hash } from 'node:crypto';
import { base32, unbase32, type DigestAlgo } from '../warc/digest.js';
import { KeyBloom } from '../seen/bloom.js';
import { newRecordId, DEFAULT_DIGEST, type RevisitInput, type WireHeads } from '../warc/records.js';
import { DigestStore, decodeDigestRecord, type DigestRecord } from './digests.js';
import { SimhashStore } from './index.js';
import { SIMHASH_TABLES, popcount32, simhash64, simhashHex } from './simhash.js';
import { DEFAULT_DEDUP_CONFIG } from '../config.js';

export interface DedupConfig {
  /** Exact-duplicate detection (payload digest → revisit records). Near-duplicates need it on too. */
  enabled: boolean;
  /** Near-duplicate detection (SimHash of the visible text of HTML pages). */
  near: boolean;
  /** Largest Hamming distance between two fingerprints that marks a near-duplicate (0..3, the index's guarantee). */
  maxDistance: number;
  /** Payload digest algorithm, the WARC writer's (`--warc-digest`; default sha1). */
  digest?: DigestAlgo;
}

// Defaults: src/config.ts (one place for every default).
export { DEFAULT_DEDUP_CONFIG };

/**
 * Lets in-memory claims go only when no store read that might have missed
 * them is still running: a claim released "after reads" is kept until every
 * read entered before that moment has left.
 */
export class Fence {
  private issued = 0;
  private readonly open = new Set<number>();
  private readonly waiting: Array<{ until: number; release: () => void }> = [];

  enter(): number {
    const t = ++this.issued;
    this.open.add(t);
    return t;
  }

  leave(ticket: number): void {
    this.open.delete(ticket);
    this.sweep();
  }

  /** Runs `release` once every read entered so far has left (at once when none is running). */
  afterReads(release: () => void): void {
    this.waiting.push({ until: this.issued, release });
    this.sweep();
  }

  /** Releases waiting to run (for tests and stats). */
  get pending(): number {
    return this.waiting.length;
  }

  private sweep(): void {
    if (this.waiting.length === 0) return;
    let min = Infinity;
    for (const t of this.open) if (t < min) min = t;
    // `until` never decreases along the queue: release from the front.
    let n = 0;
    while (n < this.waiting.length && this.waiting[n]!.until < min) n++;
    if (n === 0) return;
    for (const w of this.waiting.splice(0, n)) w.release();
  }
}

/** What the agent learns about a payload before writing its WARC records. */
export interface ExactCheck {
  /** `sha1:`/`sha256:BASE32` payload digest (WARC/1.1 §5.9): give it to the writer, it is not computed twice. */
  digest: string;
  /** WARC-Record-ID to give this capture's response record (fixed now: a concurrent duplicate may refer to it). */
  recordId: string;
  /** The first capture of this payload, under another URL: write a revisit record, do not extract links. */
  original?: DigestRecord;
  /** Writes for the page's completion batch: the digest entry when this capture is the first. */
  ops: BatchOp[];
  /** @internal the in-memory claim to release once `ops` are durable. */
  claim?: { digest: string; rec: DigestRecord };
}

/** A page's SimHash verdict. */
export interface NearCheck {
  fp: bigint;
  /** 16 hex digits, as in the fetch record and the WARC metadata. */
  hex: string;
  /** The closest earlier page within maxDistance (another URL), if any. */
  match?: { url: string; distance: number };
  /** Resolves when the fingerprint is durable in the index (wait before completing the page). */
  indexed: Promise<void>;
}

export interface DedupCounts {
  /** Payload digests computed (200 responses with a whole payload). */
  digests: number;
  /** Of those, looked up in the store (the filter could not rule them out). */
  digestReads: number;
  /** Exact duplicates (written as revisit records). */
  exact: number;
  /** Pages fingerprinted (HTML with visible text). */
  fingerprinted: number;
  /** Near-duplicates (fingerprint within maxDistance of an earlier page's). */
  near: number;
}

export class ContentDedup {
  readonly config: DedupConfig;
  readonly digests: DigestStore;
  readonly index: SimhashStore;
  /** Counters (pass an object to share, e.g. the agent's CrawlStats.dedup). */
  readonly counts: DedupCounts;
  /** Digests claimed by a first capture and maybe not yet visible in the store. */
  private readonly claimedDigests = new Map<string, { digest: string; rec: DigestRecord }>();
  /**
   * Fingerprints added and maybe not yet visible to index queries, as 32-bit
   * halves: a few dozen entries (the pages in flight), so a linear scan with
   * popcount beats any index (and needs no BigInt per entry).
   */
  private readonly recent: Array<{ hi: number; lo: number; id: string }> = [];
  /**
   * Bloom filter of every digest in the store (and every claim): a new
   * payload — nearly every page — is answered without a LevelDB read. Rebuilt
   * at start by one scan of the sublevel (`load`); until that scan is done
   * every lookup goes to the store.
   */
  private readonly filter = new KeyBloom({ bitsPerKey: 10 });
  private filterReady = false;
  /** Digest lookups of this turn, read with one getMany. */
  private lookups: Array<{ key: Buffer; resolve: (v: Buffer | undefined) => void; reject: (e: Error) => void }> = [];
  private readonly digestSub: Sublevel;
  private readonly digestFence = new Fence();
  private readonly simFence = new Fence();

  constructor(digests: Sublevel, simhash: Sublevel, config: Partial<DedupConfig> = {}, counts?: DedupCounts) {
    this.counts = counts ?? { digests: 0, digestReads: 0, exact: 0, fingerprinted: 0, near: 0 };
    const c = { ...DEFAULT_DEDUP_CONFIG, ...config };
    const max = SIMHASH_TABLES.maxDistance;
    const d = Number.isFinite(c.maxDistance) ? Math.floor(c.maxDistance) : DEFAULT_DEDUP_CONFIG.maxDistance;
    const digest: DigestAlgo = c.digest === 'sha1' || c.digest === 'sha256' ? c.digest : DEFAULT_DIGEST;
    this.config = Object.freeze({ enabled: c.enabled, near: c.enabled && c.near, maxDistance: Math.max(0, Math.min(max, d)), digest });
    this.digests = new DigestStore(digests);
    this.digestSub = digests;
    this.index = new SimhashStore(simhash, SIMHASH_TABLES);
  }

  /**
   * Fills the digest filter from the store: one scan of the sublevel's keys.
   * Correct while pages are checked meanwhile: the iterator reads a snapshot,
   * and every digest written after it was claimed first, which adds it to the
   * filter. Nothing is persisted, so a crash cannot leave a stale filter.
   * Resolves to the number of stored digests of the other algorithm (a data dir
   * first crawled with another `--warc-digest`): they are never looked up again.
   */
  async load(): Promise<{ otherAlgorithm: number }> {
    const prefix = `${this.config.digest ?? DEFAULT_DIGEST}:`;
    let otherAlgorithm = 0;
    // The SimHash index's bitmap of stored buckets, scanned alongside (SimhashStore.load).
    const index = this.config.near ? this.index.load() : Promise.resolve();
    index.catch(() => {}); // awaited below
    const it = this.digestSub.keys();
    try {
      for (;;) {
        const ks = await it.nextv(4096);
        if (ks.length === 0) break;
        for (const k of ks) {
          const label = k.toString('utf8');
          if (!label.startsWith(prefix)) { otherAlgorithm++; continue; }
          const raw = rawDigest(label);
          if (raw) this.filter.add(raw);
        }
      }
    } finally {
      await it.close();
    }
    this.filterReady = true;
    await index;
    return { otherAlgorithm };
  }

  /** Whether the HTML extraction should fingerprint the visible text (wantFingerprint). */
  get wantsText(): boolean {
    return this.config.near;
  }

  /**
   * Whether a response takes part: a whole (not truncated) non-empty 200
   * payload. A truncated body's digest is not the payload's.
   */
  applies(status: number, body: Uint8Array, truncated: unknown): boolean {
    return this.config.enabled && status === 200 && body.length > 0 && !truncated;
  }

  /** Looks the payload up; claims it for `url` when it is new. */
  async checkExact(url: string, date: Date, body: Uint8Array): Promise<ExactCheck> {
    const algo = this.config.digest ?? DEFAULT_DIGEST;
    // One-shot: no Hash object per page (node:crypto `hash`, Node ≥ 20.12).
    const raw = hash(algo, body, 'buffer');
    const digest = algo + ':' + base32(raw);
    const recordId = newRecordId();
    this.counts.digests++;
    const key16 = raw.subarray(0, 16);
    if (this.filterReady && !this.filter.mayContain(key16)) {
      // Certainly new (no false negatives): claim it without reading the store.
      return this.claim(digest, key16, { uri: url, date, recordId });
    }
    this.counts.digestReads++;
    const t = this.digestFence.enter();
    let stored: DigestRecord | undefined;
    let claimed: DigestRecord | undefined;
    try {
      const v = await this.readDigest(Buffer.from(digest, 'utf8'));
      stored = v === undefined ? undefined : decodeDigestRecord(v) ?? undefined;
      // Looked up before leaving the fence: leaving can release (at once) the claim of a capture whose put
      // this read did not see, and looked up after, neither would show it.
      claimed = this.claimedDigests.get(digest)?.rec;
    } finally {
      this.digestFence.leave(t);
    }
    const prev = stored ?? claimed;
    if (prev !== undefined && prev.uri !== url) {
      this.counts.exact++;
      return { digest, recordId, original: prev, ops: [] };
    }
    // The same URL again (fetched again after a restart, or recrawled): the first capture stays the reference.
    if (prev !== undefined) return { digest, recordId, ops: [] };
    return this.claim(digest, key16, { uri: url, date, recordId });
  }

  private claim(digest: string, key16: Uint8Array, rec: DigestRecord): ExactCheck {
    const claim = { digest, rec };
    this.claimedDigests.set(digest, claim);
    this.filter.add(key16);
    return { digest, recordId: rec.recordId, ops: [this.digests.putOp(digest, rec)], claim };
  }

  /**
   * Lookups made in the same turn go to LevelDB in one getMany: each call
   * costs a thread-pool round trip and an implicit snapshot taken under the DB
   * mutex (measured ≈ 190 µs of JS-thread time per call under load, docs/performance.md).
   */
  private readDigest(key: Buffer): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      this.lookups.push({ key, resolve, reject });
      if (this.lookups.length > 1) return;
      queueMicrotask(() => {
        const batch = this.lookups;
        this.lookups = [];
        this.digestSub.getMany(batch.map((l) => l.key)).then(
          (vs) => { for (let i = 0; i < batch.length; i++) batch[i]!.resolve(vs[i]); },
          (err: Error) => { for (const l of batch) l.reject(err); },
        );
      });
    });
  }

  /** Call once the page's completion batch (with `check.ops`) is durable. */
  committed(check: ExactCheck | undefined): void {
    const claim = check?.claim;
    if (!claim) return;
    this.digestFence.afterReads(() => {
      if (this.claimedDigests.get(claim.digest) === claim) this.claimedDigests.delete(claim.digest);
    });
  }

  /**
   * Fingerprints `text`, finds the closest earlier page within maxDistance
   * (ties: the smaller URL) and indexes the fingerprint under `url`.
   * Undefined when near-duplicate detection is off or the text has no word.
   */
  async checkNear(url: string, text: string): Promise<NearCheck | undefined> {
    if (!this.config.near) return undefined;
    return this.checkNearFingerprint(url, simhash64(text));
  }

  /**
   * checkNear with the fingerprint already taken: `fp` = simhash64 of the
   * page's visible text, e.g. `extractPage(…, { wantFingerprint: true })`
   * (which takes it without building the text string: docs/performance.md).
   */
  async checkNearFingerprint(url: string, fp: bigint): Promise<NearCheck | undefined> {
    if (!this.config.near) return undefined;
    if (fp === 0n) return undefined; // no word: nothing to compare, and every such page would match
    this.counts.fingerprinted++;
    const max = this.config.maxDistance;
    const t = this.simFence.enter();
    let best: { url: string; distance: number } | undefined;
    const hi = Number(fp >> 32n), lo = Number(fp & 0xffffffffn);
    try {
      for (const h of await this.index.query(fp, max)) best = closer(best, h.id, h.distance, url);
      // Scanned before leaving the fence, as in checkExact: leaving can drop an entry the query did not see.
      for (const r of this.recent) {
        const d = popcount32((r.hi ^ hi) >>> 0) + popcount32((r.lo ^ lo) >>> 0);
        if (d <= max) best = closer(best, r.id, d, url);
      }
    } finally {
      this.simFence.leave(t);
    }
    if (best) this.counts.near++;
    const entry = { hi, lo, id: url };
    this.recent.push(entry);
    const indexed = this.index.add(fp, url).then(() => {
      this.simFence.afterReads(() => {
        const i = this.recent.indexOf(entry);
        if (i >= 0) this.recent.splice(i, 1);
      });
    });
    return { fp, hex: simhashHex(fp), match: best, indexed };
  }

  /** In-memory claims not yet released (bounded by the pages in flight; for tests). */
  get inMemory(): { digests: number; fingerprints: number } {
    return { digests: this.claimedDigests.size, fingerprints: this.recent.length };
  }
}

/**
 * The first 16 bytes of a `sha1:`/`sha256:BASE32` digest (the filter key); null for
 * another label. A sha1 and a sha256 prefix that collide cost one store read, no more.
 */
function rawDigest(label: string): Uint8Array | null {
  const colon = label.startsWith('sha256:') ? 7 : label.startsWith('sha1:') ? 5 : -1;
  if (colon < 0) return null;
  const raw = unbase32(label.slice(colon));
  return raw && raw.length >= 16 ? raw.subarray(0, 16) : null;
}

function closer(best: { url: string; distance: number } | undefined, id: string, distance: number, self: string): { url: string; distance: number } | undefined {
  if (id === self) return best;
  if (!best || distance < best.distance || (distance === best.distance && id < best.url)) return { url: id, distance };
  return best;
}

/** The revisit record for an exact duplicate (WARC/1.1 §6.7.2, identical-payload-digest profile). */
export function revisitFor(
  res: { url: string; startedAt: Date; ip?: string; status: number; statusText?: string; responseHeaders: [string, string][]; body: Uint8Array; rawBody?: Uint8Array; wire?: WireHeads },
  check: ExactCheck & { original: DigestRecord },
): RevisitInput {
  return {
    url: res.url,
    date: res.startedAt,
    ip: res.ip,
    profile: 'identical-payload-digest',
    refersToUri: check.original.uri,
    refersToDate: check.original.date,
    ...(check.original.recordId ? { refersToRecordId: check.original.recordId } : {}),
    payloadDigest: check.digest,
    status: res.status,
    statusText: res.statusText,
    responseHeaders: res.responseHeaders,
    payloadLength: res.body.length,
    ...(res.wire ? { wire: res.wire } : {}),
  };
}

/** warc-fields of the `metadata` record noting a near-duplicate (WARC/1.1 §6.6; field names in docs/warc.md). */
export function nearDupFields(near: NearCheck & { match: { url: string; distance: number } }, maxDistance: number): Record<string, string> {
  return {
    'near-duplicate-of': near.match.url,
    'hamming-distance': String(near.match.distance),
    simhash: near.hex,
    'simhash-algorithm': `simhash64 v2 (word 3-shingles), distance <= ${maxDistance}`,
  };
}
