// The synthetic web's HTTP server: one node:http handler serving every
// virtual host (chosen by the Host header) on one or more loopback
// addresses, recording every request. Bodies come from the pure WebGraph +
// Renderer, cached in a byte-bounded LRU.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Kind, WebGraph, canonicalTarget, type TrapHost } from './graph.js';
import { Renderer } from './content.js';
import { Traps, type StaticResponse } from './traps.js';
import { computeReachable } from './reachable.js';
import { hash4 } from './prng.js';
import type {
  InterceptResponse, Reachability, ReachableOptions, RequestRecord, SyntheticWebOptions, TrapUrls, UrlInfo,
} from './types.js';

export interface SyntheticWeb {
  /** The port (the same on every address). */
  readonly port: number;
  /** The first listening address. */
  readonly address: string;
  readonly addresses: readonly string[];
  /** Number of graph hosts. */
  readonly hostCount: number;
  /** The pure model behind the server (links, kinds, routes). */
  readonly graph: WebGraph;
  /** curl-style `--resolve` argument pointing every host of the suffix at the first address. */
  readonly resolveArg: string;
  /** All `--resolve` arguments: one per host when there are several addresses, then the wildcard. */
  readonly resolveArgs: readonly string[];
  /** Entry URLs of the enabled traps. */
  readonly trapUrls: TrapUrls;
  hostName(i: number): string;
  /** Address host i is served on. */
  hostAddress(i: number): string;
  /** `http://NAME:PORT` of host i (or of a host name). */
  origin(host: number | string): string;
  /** Absolute URL of `path` on a host (index or name). */
  url(host: number | string, path?: string): string;
  /** Root URLs of every graph host. */
  roots(): string[];
  /** The live request log (do not mutate). */
  requests(): readonly RequestRecord[];
  /** Requests whose Host was `host` (index or name). */
  requestsFor(host: number | string): RequestRecord[];
  clearLog(): void;
  /** Requests currently being answered. */
  inFlight(): number;
  reachable(opts?: ReachableOptions): Reachability;
  /** What the server answers for a URL (status, kind, location, canonical links), or null if outside the web. */
  describe(url: string): UrlInfo | null;
  /** Planted duplicates (canonical URLs). */
  duplicates(): { exact: { url: string; of: string }[]; near: { url: string; of: string }[] };
  close(): Promise<void>;
}

const HTML = 'text/html; charset=utf-8';
const NOT_FOUND = Renderer.errorBody(404, 'Not Found');
const SERVER_ERROR = Renderer.errorBody(500, 'Internal Server Error');
const TOO_MANY = Renderer.errorBody(429, 'Too Many Requests');
const UNKNOWN_HOST = Renderer.errorBody(404, 'Unknown Host');
const MISDIRECTED = Renderer.errorBody(421, 'Misdirected Request');
const NOT_ALLOWED = Renderer.errorBody(405, 'Method Not Allowed');
const EMPTY = Buffer.alloc(0);

/** Pages per host fit below this in the cache key. */
const KEY_PAGES = 1 << 24;

interface CacheEntry {
  version: number;
  body: Buffer;
  etag: string;
  lastModified: string;
  lastModifiedMs: number;
}

function pageMaxOf(o: SyntheticWebOptions): number {
  const pb = o.pageBytes ?? { min: 10240, max: 30720 };
  return typeof pb === 'number' ? pb : pb.max;
}

function isLoopback(addr: string): boolean {
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(addr) || addr === '::1';
}

/** Lower-cased host name of a Host header, port removed. */
function hostOf(h: string | undefined): string {
  if (!h) return '';
  let end = h.length;
  if (h.charCodeAt(0) === 0x5b /* [ */) {
    const close = h.indexOf(']');
    return (close > 0 ? h.slice(0, close + 1) : h).toLowerCase();
  }
  const colon = h.indexOf(':');
  if (colon >= 0) end = colon;
  // A trailing dot names the same host (RFC 1034 §3.1 absolute name).
  if (end > 0 && h.charCodeAt(end - 1) === 0x2e) end--;
  const name = end === h.length ? h : h.slice(0, end);
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return name.toLowerCase();
  }
  return name;
}

/** RFC 9110 §13.1.2: If-None-Match with weak comparison. */
function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  for (let t of header.split(',')) {
    t = t.trim();
    if (t.startsWith('W/')) t = t.slice(2);
    if (t === etag) return true;
  }
  return false;
}

const REC = Symbol('record');
const BODY = Symbol('recyclable body');
type TaggedResponse = http.ServerResponse & { [REC]?: RequestRecord; [BODY]?: Buffer };

/** Recycled page buffers: size them for the largest page so one size fits all. */
const SLAB_SLACK = 64 * 1024;
const FREE_MAX = 256;

function listen(server: http.Server, port: number, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => reject(e);
    server.once('error', onError);
    server.listen(port, address, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Starts the synthetic web. See docs/synthetic-web.md. */
export async function startSyntheticWeb(options: SyntheticWebOptions = {}): Promise<SyntheticWeb> {
  // Validate every option before binding anything (the real graph needs the port).
  void new WebGraph(options, options.port ?? 0);
  const addresses = options.addresses && options.addresses.length ? [...options.addresses] : ['127.0.0.1'];
  for (const a of addresses) {
    if (!isLoopback(a)) throw new RangeError(`synthetic web listens on loopback only, not ${a}`);
  }
  const clock = options.clock ?? (() => performance.timeOrigin + performance.now());
  const logOn = options.log ?? true;
  const cacheCap = options.cacheBytes ?? 0;
  const latency = options.latencyMs ?? 0;
  const retryAfter = String(options.retryAfterSec ?? 1);
  const recoverAfter = options.tooManyRecoverAfter ?? Infinity;
  const changeEvery = options.changeEveryMs;
  const intercept = options.intercept;
  const enforceAddress = options.enforceAddress ?? false;

  // Everything below is set once the port is known (the graph writes absolute URLs).
  let graph!: WebGraph;
  let renderer!: Renderer;
  let traps!: Traps;
  let log: RequestRecord[] = [];
  let inFlight = 0;
  const cache = new Map<number, CacheEntry>();
  let cacheBytes = 0;
  const tooManyCount = new Map<number, number>();
  const sitemaps = new Map<number, Buffer>();
  const trickles = new Set<http.ServerResponse>();
  const clock0 = clock();
  const wall0 = Date.now();

  // Without a cache every body is rendered, sent and dropped: recycling the
  // buffers once 'finish' says the kernel has the bytes avoids a 20 KB
  // allocation per request and the GC and malloc churn that comes with it.
  const slabSize = pageMaxOf(options) + SLAB_SLACK;
  const free: Buffer[] = [];
  const takeSlab = (size: number): Buffer => (size <= slabSize ? free.pop() ?? Buffer.allocUnsafeSlow(slabSize) : Buffer.allocUnsafe(size));
  // One shared listener per event (no per-request closures).
  const onFinish = function (this: TaggedResponse): void {
    const r = this[REC];
    if (r) {
      r.end = clock();
      r.status = this.statusCode;
    }
    const b = this[BODY];
    if (b !== undefined) {
      if (free.length < FREE_MAX) free.push(Buffer.from(b.buffer, b.byteOffset, slabSize));
      this[BODY] = undefined;
    }
  };
  const onClose = function (this: TaggedResponse): void {
    inFlight--;
    const r = this[REC];
    if (r && r.end === 0) {
      r.end = clock();
      r.status = this.statusCode;
      r.aborted = true;
    }
  };

  function send(res: TaggedResponse, head: boolean, status: number, headers: Record<string, string | number>, body: Buffer): void {
    res.writeHead(status, headers);
    const r = res[REC];
    if (head) {
      res.end();
      return;
    }
    if (r) r.bytes = body.length;
    res.end(body);
  }

  function sendStatic(res: TaggedResponse, head: boolean, s: StaticResponse): void {
    send(res, head, s.status, s.headers, s.body);
  }

  function sendIntercept(res: TaggedResponse, head: boolean, x: InterceptResponse): void {
    const body = x.body === undefined ? EMPTY : typeof x.body === 'string' ? Buffer.from(x.body, 'utf8') : Buffer.from(x.body);
    const headers: Record<string, string | number> = { 'content-length': body.length, ...(x.headers ?? {}) };
    send(res, head, x.status, headers, body);
  }

  function cacheGet(key: number, version: number): CacheEntry | undefined {
    const e = cache.get(key);
    if (e === undefined) return undefined;
    if (e.version !== version) {
      cache.delete(key);
      cacheBytes -= e.body.length;
      return undefined;
    }
    // LRU: re-insert to move to the end of the Map's iteration order.
    cache.delete(key);
    cache.set(key, e);
    return e;
  }

  function cachePut(key: number, e: CacheEntry): void {
    if (e.body.length > cacheCap) return;
    cache.set(key, e);
    cacheBytes += e.body.length;
    while (cacheBytes > cacheCap) {
      const oldest = cache.keys().next().value as number;
      cacheBytes -= cache.get(oldest)!.body.length;
      cache.delete(oldest);
    }
  }

  /** 200 HTML of page k on host i (content of `src`, near-dup boilerplate if alt), with conditional GET. */
  function servePage(req: http.IncomingMessage, res: TaggedResponse, head: boolean, i: number, k: number, src: number, alt: boolean): void {
    let version = 0;
    let every: number | undefined;
    if (changeEvery !== undefined) {
      every = changeEvery(graph.hostName(i), graph.pagePath(i, src));
      if (every !== undefined && every > 0) version = Math.max(0, Math.floor((clock() - clock0) / every));
      else every = undefined;
    }
    // Exact duplicates share their source's cache entry (identical bytes).
    const keyPage = alt ? k : src;
    const key = i * KEY_PAGES + keyPage;
    const cached = cacheCap > 0 ? cacheGet(key, version) : undefined;
    let etag: string;
    let lastModified: string;
    let lastModifiedMs: number;
    if (cached !== undefined) {
      ({ etag, lastModified, lastModifiedMs } = cached);
    } else {
      const lm = every !== undefined ? wall0 + version * every : graph.staticLastModified(i, src);
      etag = `"${hash4(graph.cfg.seed, i, keyPage, version).toString(16)}-${version}"`;
      lastModified = new Date(lm).toUTCString();
      lastModifiedMs = Math.floor(lm / 1000) * 1000;
    }
    // RFC 9110 §13.1.2 / §13.1.3: If-None-Match wins; If-Modified-Since only without it.
    // Validators are known before the body, so a 304 renders nothing.
    const inm = req.headers['if-none-match'];
    let notModified = false;
    if (inm !== undefined) notModified = etagMatches(inm, etag);
    else {
      const ims = req.headers['if-modified-since'];
      if (ims !== undefined) {
        const t = Date.parse(ims);
        notModified = !Number.isNaN(t) && lastModifiedMs <= t;
      }
    }
    if (notModified) {
      send(res, true, 304, { etag, 'last-modified': lastModified }, EMPTY);
      return;
    }
    let body: Buffer;
    if (cached !== undefined) body = cached.body;
    else if (head) body = renderer.renderArticle(i, src, version, alt, k);
    else if (cacheCap === 0) {
      body = renderer.renderArticle(i, src, version, alt, k, takeSlab);
      if (body.buffer.byteLength === slabSize && body.byteOffset === 0) {
        res[BODY] = body;
      }
    } else {
      body = renderer.renderArticle(i, src, version, alt, k);
      cachePut(key, { version, body, etag, lastModified, lastModifiedMs });
    }
    send(res, head, 200, { 'content-type': HTML, 'content-length': body.length, etag, 'last-modified': lastModified }, body);
  }

  function redirectTo(res: TaggedResponse, head: boolean, status: number, location: string): void {
    send(res, head, status, { location, 'content-type': HTML, 'content-length': 0 }, EMPTY);
  }

  function serveGraph(req: http.IncomingMessage, res: TaggedResponse, head: boolean, i: number, target: string): void {
    const q = target.indexOf('?');
    let path = q >= 0 ? target.slice(0, q) : target;
    let route = graph.route(i, path);
    if (route.t === 'missing' && (path.indexOf('%') >= 0 || path.indexOf('/.') >= 0)) {
      // A crawler that does not normalise still gets the page (as a real server would).
      path = canonicalTarget(path);
      route = graph.route(i, path);
    }
    switch (route.t) {
      case 'page': {
        const k = route.page;
        switch (graph.kind(i, k)) {
          case Kind.Ok: return servePage(req, res, head, i, k, k, false);
          case Kind.ExactDup: return servePage(req, res, head, i, k, graph.contentSource(i, k), false);
          case Kind.NearDup: return servePage(req, res, head, i, k, graph.contentSource(i, k), true);
          case Kind.Redirect: {
            const r = graph.redirect(i, k);
            return redirectTo(res, head, r.codes[0], graph.redirectWireLocation(i, k, 0, r));
          }
          case Kind.NotFound: return send(res, head, 404, { 'content-type': HTML, 'content-length': NOT_FOUND.length }, NOT_FOUND);
          case Kind.ServerError:
            return send(res, head, 500, { 'content-type': HTML, 'content-length': SERVER_ERROR.length }, SERVER_ERROR);
          case Kind.TooMany: {
            if (recoverAfter !== Infinity) {
              const key = i * KEY_PAGES + k;
              const n = tooManyCount.get(key) ?? 0;
              if (n >= recoverAfter) return servePage(req, res, head, i, k, k, false);
              tooManyCount.set(key, n + 1);
            }
            return send(res, head, 429, {
              'content-type': HTML, 'content-length': TOO_MANY.length, 'retry-after': retryAfter,
            }, TOO_MANY);
          }
        }
        return;
      }
      case 'hop': {
        const r = graph.redirect(i, route.page);
        return redirectTo(res, head, r.codes[route.hop], graph.redirectWireLocation(i, route.page, route.hop, r));
      }
      case 'moved':
        return servePage(req, res, head, i, route.page, route.page, false);
      case 'robots': {
        const r = graph.robots(i);
        const body = Buffer.from(r.body, 'utf8');
        if (r.status >= 300 && r.status < 400 && r.location) {
          // The body belongs to the redirect target (robotsAlt), not to this answer.
          return send(res, head, r.status, { location: r.location, 'content-length': 0 }, EMPTY);
        }
        const headers: Record<string, string | number> = { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length };
        if (r.retryAfterSec !== undefined) headers['retry-after'] = String(r.retryAfterSec);
        return send(res, head, r.status, headers, body);
      }
      case 'robotsAlt': {
        const body = Buffer.from(graph.robots(i).body, 'utf8');
        return send(res, head, 200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length }, body);
      }
      case 'sitemap': {
        let body = sitemaps.get(i);
        if (body === undefined) {
          body = Buffer.from(graph.sitemapXml(i, (p) => changefreq(graph.hostName(i), p)), 'utf8');
          sitemaps.set(i, body);
        }
        return send(res, head, 200, { 'content-type': 'application/xml', 'content-length': body.length }, body);
      }
      case 'missing':
        return send(res, head, 404, { 'content-type': HTML, 'content-length': NOT_FOUND.length }, NOT_FOUND);
    }
  }

  function changefreq(host: string, path: string): string | null {
    const every = changeEvery?.(host, path);
    if (every === undefined || !(every > 0)) return null;
    if (every <= 3600e3) return 'hourly';
    if (every <= 86400e3) return 'daily';
    if (every <= 7 * 86400e3) return 'weekly';
    return 'monthly';
  }

  function serveTrap(res: TaggedResponse, head: boolean, t: TrapHost, target: string): void {
    const q = target.indexOf('?');
    const path = q >= 0 ? target.slice(0, q) : target;
    const r = traps.respond(t, path, q >= 0 ? target.slice(q + 1) : '');
    if (r !== 'slow') return sendStatic(res, head, r);
    res.writeHead(200, { 'content-type': HTML });
    if (head) {
      res.end();
      return;
    }
    res.write('<!DOCTYPE html>\n<html><body>\n');
    const rec = res[REC];
    if (rec) rec.bytes += 29;
    trickles.add(res);
    const chunk = '<p>still loading</p>\n';
    const timer = setInterval(() => {
      res.write(chunk);
      if (rec) rec.bytes += chunk.length;
    }, graph.cfg.traps!.trickleMs);
    res.once('close', () => {
      clearInterval(timer);
      trickles.delete(res);
    });
  }

  function respond(req: http.IncomingMessage, res: TaggedResponse, host: string, i: number, target: string): void {
    if (res.destroyed) return;
    const head = req.method === 'HEAD';
    if (i >= 0) return serveGraph(req, res, head, i, target);
    const t = graph.trapHosts.get(host);
    if (t !== undefined) return serveTrap(res, head, t, target);
    send(res, head, 404, { 'content-type': HTML, 'content-length': UNKNOWN_HOST.length }, UNKNOWN_HOST);
  }

  /** Test hooks (intercept, latency, changeEveryMs) may throw: answer 500 instead of crashing the server. */
  function fail(res: http.ServerResponse, e: unknown): void {
    if (!res.headersSent) {
      const body = Buffer.from(`synthetic web: ${(e as Error)?.message ?? String(e)}\n`, 'utf8');
      send(res as TaggedResponse, false, 500, { 'content-type': 'text/plain', 'content-length': body.length }, body);
    } else {
      res.destroy();
    }
  }

  function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
    try {
      handle(req, res);
    } catch (e) {
      fail(res, e);
    }
  }

  function respondLater(req: http.IncomingMessage, res: TaggedResponse, host: string, i: number, target: string): void {
    try {
      respond(req, res, host, i, target);
    } catch (e) {
      fail(res, e);
    }
  }

  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const start = clock();
    const tres = res as TaggedResponse;
    inFlight++;
    res.on('close', onClose);
    res.on('finish', onFinish);
    let host = hostOf(req.headers.host);
    let target = req.url ?? '/';
    if (target.charCodeAt(0) !== 0x2f) {
      // absolute-form (RFC 9112 §3.2.2) or garbage
      try {
        const u = new URL(target);
        target = u.pathname + u.search;
      } catch {
        target = '/';
      }
    }
    const i = graph.hostIndex(host);
    if (i >= 0) host = graph.hostName(i); // one shared string per host in the log
    const method = req.method ?? 'GET';
    if (logOn) {
      const sock = req.socket;
      const rec: RequestRecord = {
        host,
        path: target,
        method,
        clientAddress: sock.remoteAddress ?? '',
        clientPort: sock.remotePort ?? 0,
        localAddress: sock.localAddress ?? '',
        localPort: sock.localPort ?? 0,
        start,
        end: 0,
        status: 0,
        bytes: 0,
        aborted: false,
        url: host === '' ? null : (i >= 0 ? graph.origin(i) : graph.originOf(host)) + canonicalTarget(target),
        userAgent: req.headers['user-agent'] ?? '',
        conditional: req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined,
      };
      tres[REC] = rec;
      log.push(rec);
    }
    if (method !== 'GET' && method !== 'HEAD') {
      return send(tres, false, 405, { allow: 'GET, HEAD', 'content-type': HTML, 'content-length': NOT_ALLOWED.length }, NOT_ALLOWED);
    }
    if (intercept !== undefined) {
      const x = intercept({ host, hostIndex: i, path: target, method, now: start, headers: req.headers });
      if (x instanceof Promise) {
        x.then((r) => sendIntercept(tres, method === 'HEAD', r), (e: unknown) => fail(tres, e));
        return;
      }
      if (x) return sendIntercept(tres, method === 'HEAD', x);
    }
    if (enforceAddress && i >= 0 && addresses.length > 1 && req.socket.localAddress !== addresses[i % addresses.length]) {
      return send(tres, method === 'HEAD', 421, { 'content-type': HTML, 'content-length': MISDIRECTED.length }, MISDIRECTED);
    }
    const ms = typeof latency === 'number' ? latency : latency(host, target, i);
    if (ms > 0) setTimeout(respondLater, ms, req, tres, host, i, target);
    else respond(req, tres, host, i, target);
  }

  const servers: http.Server[] = [];
  const makeServer = (): http.Server => {
    const s = http.createServer({ keepAlive: true, noDelay: true }, handler);
    // Crawlers keep connections per host for a long time between polite requests.
    s.keepAliveTimeout = 65_000;
    s.headersTimeout = 70_000;
    s.requestTimeout = 0;
    s.maxRequestsPerSocket = 0;
    return s;
  };
  let port = options.port ?? 0;
  for (let attempt = 0; ; attempt++) {
    for (const s of servers) await closeServer(s);
    servers.length = 0;
    try {
      const first = makeServer();
      servers.push(first);
      port = await listen(first, options.port ?? 0, addresses[0]);
      for (const a of addresses.slice(1)) {
        const s = makeServer();
        servers.push(s);
        await listen(s, port, a);
      }
      break;
    } catch (e) {
      // An ephemeral port taken on another address: try another one.
      if ((options.port ?? 0) !== 0 || attempt >= 10 || (e as NodeJS.ErrnoException).code !== 'EADDRINUSE') {
        for (const s of servers) await closeServer(s);
        throw e;
      }
    }
  }

  graph = new WebGraph(options, port);
  renderer = new Renderer(graph);
  traps = new Traps(graph.cfg.traps?.gzipBombBytes ?? 0);
  const suffix = graph.cfg.hostSuffix;
  const resolveArg = `*.${suffix}:${port}:${addresses[0]}`;
  const resolveArgs: string[] = [];
  if (addresses.length > 1) {
    for (let i = 0; i < graph.hosts; i++) resolveArgs.push(`${graph.hostName(i)}:${port}:${addresses[i % addresses.length]}`);
  }
  resolveArgs.push(resolveArg);
  const nameOf = (h: number | string): string => (typeof h === 'number' ? graph.hostName(h) : h.toLowerCase());

  return {
    port,
    address: addresses[0],
    addresses,
    hostCount: graph.hosts,
    graph,
    resolveArg,
    resolveArgs,
    trapUrls: graph.trapEntryUrls() as TrapUrls,
    hostName: (i) => graph.hostName(i),
    hostAddress: (i) => addresses[i % addresses.length],
    origin: (h) => (typeof h === 'number' ? graph.origin(h) : graph.originOf(h.toLowerCase())),
    url: (h, path = '/') => (typeof h === 'number' ? graph.origin(h) : graph.originOf(h.toLowerCase())) + path,
    roots: () => Array.from({ length: graph.hosts }, (_, i) => graph.pageUrl(i, 0)),
    requests: () => log,
    requestsFor: (h) => {
      const name = nameOf(h);
      return log.filter((r) => r.host === name);
    },
    clearLog: () => {
      log = [];
    },
    inFlight: () => inFlight,
    reachable: (o) => computeReachable(graph, o),
    describe: (u) => graph.describe(u),
    duplicates: () => graph.duplicates(),
    close: async () => {
      for (const r of trickles) r.destroy();
      trickles.clear();
      await Promise.all(servers.map(closeServer));
    },
  };
}
