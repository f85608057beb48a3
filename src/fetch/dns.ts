// Host name resolution for the fetcher (docs/politeness.md "DNS").
//
// Order of precedence for a name:
//   1. an IP literal is used as is (in any notation a URL accepts: src/fetch/address.ts);
//   2. a `--resolve HOST:PORT:ADDR` rule (curl syntax) wins over everything else;
//   3. `localhost` and `*.localhost` are loopback without asking anyone (RFC 6761 §6.3);
//   4. the cache (positive entries live for the record TTL clamped to
//      [minTtlMs, maxTtlMs]; NXDOMAIN/NODATA for negativeTtlMs, RFC 2308 §5;
//      transient failures for errorTtlMs so a broken name is not re-asked per URL);
//   5. one query through node's c-ares `dns.promises.Resolver`, coalesced: every
//      concurrent ask for a name waits on the same query.
//
// Why c-ares and not `dns.lookup`: lookup is getaddrinfo on libuv's thread pool
// (4 threads by default, shared with fs, zlib and crypto), so four slow names
// stall every other lookup and every file write behind them. c-ares queries are
// asynchronous on one socket: a name whose server takes seconds delays only the
// fetches for that name.
//
// The system resolver (`dns.lookup`: hosts file, nsswitch, mDNS) is used only if
// `lookupFallback` is on, and then only after c-ares failed for a reason other
// than a timeout (a name that times out in c-ares would most likely hold a
// thread-pool thread just as long). It is off by default: a crawler resolves
// public names, and `--resolve` is the supported way to pin a name locally.
import { lookup, Resolver } from 'node:dns/promises';
import { DEFAULT_DNS_CONFIG, matchResolveRule, type ResolveRule } from '../config.js';
import { parseIpLiteral } from './address.js';
import { unbracketHost } from '../url/host.js';

export interface Resolved { address: string; family: 4 | 6 }

export interface DnsConfig {
  /** DNS servers, `IP` or `IP:PORT` (`[v6]:PORT`). Empty: the system's (/etc/resolv.conf). */
  servers: string[];
  /** Floor on a cached answer's lifetime, ms (a TTL of 0 would mean one query per connection). */
  minTtlMs: number;
  /** Ceiling on a cached answer's lifetime, ms (hosts move; a week-long crawl must notice). */
  maxTtlMs: number;
  /** How long NXDOMAIN / NODATA is remembered, ms (RFC 2308 §5; c-ares does not give us the SOA minimum). */
  negativeTtlMs: number;
  /** How long a transient failure (timeout, SERVFAIL, refused) is remembered, ms. */
  errorTtlMs: number;
  /** Bound on one query (A or AAAA), ms; c-ares' own retries happen inside it. */
  queryTimeoutMs: number;
  /** c-ares attempts per query within queryTimeoutMs. */
  tries: number;
  /** 4: A only; 6: AAAA only; 0: A, then AAAA when the name has no A record. */
  family: 0 | 4 | 6;
  /** Cache entries kept (oldest evicted first). */
  maxEntries: number;
  /** `prefetch` refreshes an answer that expires within this window, ms. */
  prefetchWindowMs: number;
  /** Try the system resolver (hosts file, nsswitch) when c-ares fails other than by timeout. */
  lookupFallback: boolean;
}

// Defaults: src/config.ts (one place for every default).
export { DEFAULT_DNS_CONFIG };

export interface HostResolverOptions extends Partial<DnsConfig> {
  /** Clock, epoch ms (tests move it to expire entries). */
  now?: () => number;
}

/** Error codes after which asking again soon cannot help: the name (or its address family) does not exist. */
const PERMANENT = new Set(['ENOTFOUND', 'ENODATA', 'EBADNAME', 'EBADQUERY', 'EBADFAMILY']);

/**
 * A resolution failure. `permanent`: NXDOMAIN (ENOTFOUND), NODATA (ENODATA) or a
 * name that cannot be valid — do not retry the URL. Otherwise (ETIMEOUT,
 * ESERVFAIL, EREFUSED, ECONNREFUSED, …) the failure is transient: retry later.
 */
export class DnsError extends Error {
  readonly permanent: boolean;
  constructor(readonly host: string, readonly code: string, detail?: string) {
    super(`${code} ${host}${detail ? ` (${detail})` : ''}`);
    this.name = 'DnsError';
    this.permanent = PERMANENT.has(code);
  }
}

/** True when `err` is (or wraps, via `cause`) a permanent DNS failure. */
export function isPermanentDnsError(err: unknown): boolean {
  for (let e = err as { permanent?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (e instanceof DnsError) return e.permanent;
  }
  return false;
}

export interface DnsStats {
  /** Queries sent (A and AAAA counted separately). */
  queries: number;
  /** Answers served from the cache (positive or negative). */
  cacheHits: number;
  /** Asks that joined a query already in flight. */
  coalesced: number;
  timeouts: number;
  permanentFailures: number;
  transientFailures: number;
  prefetches: number;
  fallbackLookups: number;
}

interface Entry {
  expires: number;
  value: Resolved | null;
  error: DnsError | null;
}

const LOOPBACK: Resolved = Object.freeze({ address: '127.0.0.1', family: 4 }) as Resolved;

export class HostResolver {
  readonly config: DnsConfig;
  readonly stats: DnsStats = { queries: 0, cacheHits: 0, coalesced: 0, timeouts: 0, permanentFailures: 0, transientFailures: 0, prefetches: 0, fallbackLookups: 0 };
  private readonly resolver: Resolver;
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Resolved>>();
  /** One answer object per rule, so `fromRule` is a set lookup. */
  private readonly ruleAnswers = new WeakSet<Resolved>();
  private readonly answerOf = new Map<ResolveRule, Resolved>();
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly rules: readonly ResolveRule[], options: HostResolverOptions = {}) {
    const { now, ...cfg } = options;
    this.config = { ...DEFAULT_DNS_CONFIG, ...stripUndefined(cfg) };
    this.now = now ?? Date.now;
    for (const rule of rules) {
      const answer: Resolved = Object.freeze({ address: rule.address, family: rule.address.includes(':') ? 6 : 4 });
      this.answerOf.set(rule, answer);
      this.ruleAnswers.add(answer);
    }
    const tries = Math.max(1, this.config.tries | 0);
    // c-ares retransmits within our bound; the outer timer below is the hard limit.
    this.resolver = new Resolver({ timeout: Math.max(1, Math.floor(this.config.queryTimeoutMs / tries)), tries });
    if (this.config.servers.length) this.resolver.setServers(this.config.servers);
  }

  /** Address to connect to for host:port. Rejects with a DnsError. */
  resolve(host: string, port: number): Promise<Resolved> {
    const fixed = this.fixed(host, port);
    if (fixed) return Promise.resolve(fixed);
    const name = canonicalName(host);
    const hit = this.cache.get(name);
    if (hit && hit.expires > this.now()) {
      this.stats.cacheHits++;
      return hit.value ? Promise.resolve(hit.value) : Promise.reject(hit.error);
    }
    const pending = this.inflight.get(name);
    if (pending) { this.stats.coalesced++; return pending; }
    return this.start(name);
  }

  /**
   * Starts resolving a host that is about to become ready, so its first fetch
   * does not wait for DNS. A no-op for literals, `--resolve` names, names in
   * flight and answers that stay fresh for longer than prefetchWindowMs. A
   * cached answer keeps being served while it is refreshed. Never rejects.
   */
  prefetch(host: string, port?: number): void {
    if (this.closed) return;
    if (port !== undefined ? this.fixed(host, port) : (this.fixed(host, 80) || this.fixed(host, 443))) return;
    const name = canonicalName(host);
    if (this.inflight.has(name)) return;
    const hit = this.cache.get(name);
    const now = this.now();
    if (hit && (hit.value ? hit.expires - now > this.config.prefetchWindowMs : hit.expires > now)) return;
    this.stats.prefetches++;
    this.start(name).catch(() => {});
  }

  /** The cached failure for a host, if its last resolution failed and is still remembered. */
  failure(host: string): DnsError | undefined {
    const hit = this.cache.get(canonicalName(host));
    return hit && hit.error && hit.expires > this.now() ? hit.error : undefined;
  }

  /**
   * What `resolve` would answer at once, without a query: the address (IP
   * literal, `--resolve` rule, localhost, cached answer) or the cached failure.
   * Undefined when a query is needed — the caller can then wait for it without
   * holding anything else up.
   */
  cached(host: string, port: number): Resolved | DnsError | undefined {
    const fixed = this.fixed(host, port);
    if (fixed) return fixed;
    const hit = this.cache.get(canonicalName(host));
    if (!hit || hit.expires <= this.now()) return undefined;
    return hit.value ?? hit.error ?? undefined;
  }

  /** Cached answer without querying (undefined when absent or expired). */
  peek(host: string): Resolved | undefined {
    const hit = this.cache.get(canonicalName(host));
    return hit && hit.value && hit.expires > this.now() ? hit.value : undefined;
  }

  /**
   * Whether an answer of `resolve` or `cached` came from a `--resolve` rule.
   * Such a rule is the operator's own choice of address, so the address guard
   * lets it through (docs/operations.md "Internal addresses").
   */
  fromRule(answer: Resolved): boolean {
    return this.ruleAnswers.has(answer);
  }

  get size(): number { return this.cache.size; }

  /** Cancels queries in flight (they reject with ECANCELLED) and drops the cache. */
  close(): void {
    this.closed = true;
    this.resolver.cancel();
    this.cache.clear();
  }

  // ---- internals --------------------------------------------------------

  private fixed(host: string, port: number): Resolved | undefined {
    const h = unbracketHost(host);
    // Any notation a URL accepts (2130706433, 0x7f.1, 127.1): never a name to look up.
    const lit = parseIpLiteral(h);
    if (lit) return lit;
    const name = canonicalName(h);
    const rule = matchResolveRule(this.rules, name, port);
    if (rule) return this.answerOf.get(rule);
    if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
    return undefined;
  }

  private start(name: string): Promise<Resolved> {
    const p = this.query(name).finally(() => { this.inflight.delete(name); });
    this.inflight.set(name, p);
    return p;
  }

  private async query(name: string): Promise<Resolved> {
    if (this.closed) throw new DnsError(name, 'ECANCELLED', 'resolver closed');
    if (!validName(name)) return this.fail(name, new DnsError(name, 'EBADNAME'));
    let err: DnsError;
    try {
      const { address, family, ttl } = await this.ask(name);
      const value: Resolved = { address, family };
      const ms = Math.min(this.config.maxTtlMs, Math.max(this.config.minTtlMs, ttl * 1000));
      this.store(name, { expires: this.now() + ms, value, error: null });
      return value;
    } catch (e) {
      err = e instanceof DnsError ? e : new DnsError(name, (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN', (e as Error).message);
    }
    if (this.config.lookupFallback && err.code !== 'ETIMEOUT' && err.code !== 'ECANCELLED') {
      this.stats.fallbackLookups++;
      try {
        const r = await lookup(name, { verbatim: true, family: this.config.family });
        const value: Resolved = { address: r.address, family: r.family === 6 ? 6 : 4 };
        this.store(name, { expires: this.now() + this.config.minTtlMs, value, error: null });
        return value;
      } catch { /* keep the c-ares verdict */ }
    }
    return this.fail(name, err);
  }

  private fail(name: string, err: DnsError): never {
    if (err.code === 'ETIMEOUT') this.stats.timeouts++;
    if (err.permanent) this.stats.permanentFailures++;
    else this.stats.transientFailures++;
    const now = this.now();
    const prev = this.cache.get(name);
    // A transient failure while refreshing does not throw away an answer that is still valid.
    if (!(prev?.value && prev.expires > now && !err.permanent) && err.code !== 'ECANCELLED') {
      this.store(name, { expires: now + (err.permanent ? this.config.negativeTtlMs : this.config.errorTtlMs), value: null, error: err });
    }
    throw err;
  }

  /** A, or AAAA, per `family`; the smallest TTL of the answer set. */
  private async ask(name: string): Promise<{ address: string; family: 4 | 6; ttl: number }> {
    const fam = this.config.family;
    if (fam !== 6) {
      try {
        return pick(name, await this.timed(name, this.resolver.resolve4(name, { ttl: true })), 4);
      } catch (e) {
        if (fam === 4 || (e as DnsError).code !== 'ENODATA') throw e;
      }
    }
    return pick(name, await this.timed(name, this.resolver.resolve6(name, { ttl: true })), 6);
  }

  private timed<T>(name: string, p: Promise<T>): Promise<T> {
    this.stats.queries++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new DnsError(name, 'ETIMEOUT', `no answer in ${this.config.queryTimeoutMs} ms`)), this.config.queryTimeoutMs);
      p.then((v) => { clearTimeout(timer); resolve(v); }, (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new DnsError(name, e.code ?? 'EUNKNOWN'));
      });
    });
  }

  private store(name: string, e: Entry): void {
    this.cache.delete(name); // re-inserting moves it to the young end
    this.cache.set(name, e);
    if (this.cache.size > this.config.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }
}

function pick(name: string, records: { address: string; ttl: number }[], family: 4 | 6): { address: string; family: 4 | 6; ttl: number } {
  if (records.length === 0) throw new DnsError(name, 'ENODATA');
  let ttl = records[0]!.ttl;
  for (let i = 1; i < records.length; i++) if (records[i]!.ttl < ttl) ttl = records[i]!.ttl;
  // The first address, always: a stable address keeps one connection and one per-IP clock per host.
  return { address: records[0]!.address, family, ttl };
}

/** Lower case, without the root's trailing dot. */
function canonicalName(host: string): string {
  let h = host;
  for (let i = 0; i < h.length; i++) {
    const c = h.charCodeAt(i);
    if (c >= 65 && c <= 90) { h = h.toLowerCase(); break; }
  }
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** RFC 1035 §2.3.4 lengths: ≤ 253 characters, labels 1–63. */
function validName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  let start = 0;
  for (let i = 0; i <= name.length; i++) {
    if (i === name.length || name.charCodeAt(i) === 46) {
      const len = i - start;
      if (len < 1 || len > 63) return false;
      start = i + 1;
    }
  }
  return true;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
