// Public types of the synthetic web (bench/web). See docs/synthetic-web.md.

/** How a robots.txt is answered. A string is served as `200 text/plain`. */
export type RobotsSpec =
  | string
  | {
      /** HTTP status of /robots.txt (e.g. 404, 503, 301). */
      status: number;
      /** Body: for 2xx the robots.txt itself; for 3xx the body served at `location` when that is a path on the same host. */
      body?: string;
      /** Location header for 3xx answers (a same-host path or an absolute URL). */
      location?: string;
      /** Retry-After (seconds) sent with 429/503. */
      retryAfterSec?: number;
    };

/**
 * Robots policy: `'allow'` (default: everything allowed), `'mixed'` (a fixed
 * rotation of tricky files, see docs), one spec for every host, or a function
 * of the host (return undefined for the default).
 */
export type RobotsOption = 'allow' | 'mixed' | RobotsSpec | ((hostName: string, hostIndex: number) => RobotsSpec | undefined);

/** Shares (0..1) of non-root pages answering with an error or a redirect. */
export interface ErrorMix {
  /** 404 Not Found. */
  notFound?: number;
  /** 301/302 chains of length 1–3. */
  redirect?: number;
  /** 500 Internal Server Error. */
  serverError?: number;
  /** 429 Too Many Requests with Retry-After. */
  tooMany?: number;
}

/** Link variants that a good URL normaliser collapses to the canonical URL. */
export type VariantKind = 'case' | 'dot' | 'fragment' | 'pct' | 'tracking' | 'defaultPort';

export interface TrapOptions {
  /** Endless calendar host: /cal/Y/M/D links the next day forever. Default true. */
  calendar?: boolean;
  /** Endless pager (/list?page=N links page N+1) and session-id URLs (/shop?sid=X links a new sid). Default true. */
  pager?: boolean;
  /** /slow-forever: 200, then a few bytes every `trickleMs`, never ending. Default true. */
  slowForever?: boolean;
  /** Interval of the never-ending body's chunks. Default 100 ms. */
  trickleMs?: number;
  /** gzip bomb: Content-Encoding gzip, expands to `gzipBombBytes`. Default true. */
  gzipBomb?: boolean;
  /** Decompressed size of the bomb. Default 1 GiB (≈ 1 MiB on the wire: deflate tops out near 1032:1). */
  gzipBombBytes?: number;
  /** Malformed HTML page. Default true. */
  malformedHtml?: boolean;
  /** PDF, PNG and binary-served-as-text/html bodies. Default true. */
  nonHtml?: boolean;
  /** Redirect loop (a→b→a), self-redirect, endless redirect chain. Default true. */
  redirectLoop?: boolean;
  /** Link every enabled trap's entry URL from the root page of host 0. Default true. */
  linkFromRoot?: boolean;
}

/** What a test-supplied intercept may answer instead of the synthetic site. */
export interface InterceptResponse {
  status: number;
  headers?: Record<string, string | number>;
  body?: string | Uint8Array;
}

export interface InterceptRequest {
  /** Lower-cased host name, port removed. */
  host: string;
  /** Index of a graph host, or -1 (trap or unknown host). */
  hostIndex: number;
  /** Request target as received (path and query). */
  path: string;
  method: string;
  /** Same clock as the request log (ms). */
  now: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface SyntheticWebOptions {
  /** Seed of everything random. Default 1. */
  seed?: number | string;
  /** Number of graph hosts. Default 10. */
  hosts?: number;
  /** Pages per host (page 0 is the root `/`). Default 20. */
  pagesPerHost?: number | ((hostIndex: number) => number);
  /** Out-links per page (article links; the nav link to `/` comes on top). Default 8. */
  outLinks?: number;
  /** Share of out-links that point to another host. Default 0.2. */
  crossHostShare?: number;
  /** Page size in bytes, fixed or a uniform range. Default { min: 10240, max: 30720 }. */
  pageBytes?: number | { min: number; max: number };
  /** When > 0, most non-root pages live under /s<n>/p/<k> (n < sections) for path-depth variety. Default 0. */
  sections?: number;
  /** Share of links written as a variant of the canonical URL. Default 0. */
  variantShare?: number;
  /** Which variants to use. Default all of them (`defaultPort` only when the port is 80). */
  variantKinds?: VariantKind[];
  /** Share of links with rel="nofollow". Default 0. */
  nofollowShare?: number;
  /** Error and redirect shares. Default none. */
  errorMix?: ErrorMix;
  /** Share of redirect chains that end at another existing page rather than at /m/<k>. Default 0.5. */
  redirectToExistingShare?: number;
  /**
   * Share of pages that are near-duplicates of another page of the same
   * host: the same article (text and links) in different boilerplate
   * (markup, classes, style, comments; different bytes, so no exact-digest
   * match). Default 0.
   */
  nearDupShare?: number;
  /**
   * Words of the near-duplicates' ad block that differ from the original's
   * visible text. Default 0: visible text identical, so any visible-text
   * SimHash puts the pair at distance 0. With n > 0 the distance is small but
   * has a tail (docs/synthetic-web.md gives the measured distribution).
   */
  nearDupChangedWords?: number;
  /** Share of pages whose body is byte-identical to another page's. Default 0. */
  exactDupShare?: number;
  /** robots.txt policy. Default 'allow'. */
  robots?: RobotsOption;
  /** Serve /sitemap.xml per host. Default true. */
  sitemap?: boolean;
  /** Host names are `${hostPrefix}${i}.${hostSuffix}`. Defaults 'h' and 'web.test'. */
  hostPrefix?: string;
  hostSuffix?: string;
  /** Trap hosts; `true` enables all. Default off. */
  traps?: boolean | TrapOptions;

  // --- server behaviour ---
  /** Loopback addresses to listen on. Host i is served on addresses[i % n]. Default ['127.0.0.1']. */
  addresses?: string[];
  /** Port (the same on every address). 0 = ephemeral. Default 0. */
  port?: number;
  /** Delay before answering, fixed or per request. Default 0. */
  latencyMs?: number | ((host: string, path: string, hostIndex: number) => number);
  /** Retry-After seconds of 429 pages. Default 1. */
  retryAfterSec?: number;
  /** After this many 429 answers a tooMany page serves normally. Default Infinity (always 429). */
  tooManyRecoverAfter?: number;
  /** Content of (host, path) changes every N ms of `clock` (undefined: never). */
  changeEveryMs?: (host: string, path: string) => number | undefined;
  /** Clock for content versions and the request log, in ms. Default performance.timeOrigin + performance.now(). */
  clock?: () => number;
  /** Answer 421 when a host is requested on an address other than its own. Default false. */
  enforceAddress?: boolean;
  /** Record requests. Default true. */
  log?: boolean;
  /**
   * Bytes of rendered pages kept in an LRU cache. Default 0: a crawl fetches
   * each page once, and rendering (~15 µs for 20 KB) is cheaper than keeping
   * bodies alive; turn it on for workloads that refetch pages.
   */
  cacheBytes?: number;
  /** Called before routing; a non-null answer is served instead; a promise of one is served when it settles (a request held). */
  intercept?: (req: InterceptRequest) => InterceptResponse | Promise<InterceptResponse> | null | undefined;
}

/** One served request. Times are in ms on the web's clock (epoch-based, sub-ms). */
export interface RequestRecord {
  /** Lower-cased Host header without the port. */
  host: string;
  /** Request target as received (path and query). */
  path: string;
  method: string;
  clientAddress: string;
  clientPort: number;
  /** The server address the client connected to (the "IP" for per-IP politeness). */
  localAddress: string;
  localPort: number;
  /** When the request head had arrived. */
  start: number;
  /** When the response was handed to the OS, or the connection closed (0 while in flight). */
  end: number;
  status: number;
  /** Body bytes sent (wire bytes, i.e. compressed for the gzip bomb). */
  bytes: number;
  /** The client went away before the response finished. */
  aborted: boolean;
  /** Canonical URL of what was asked for (RFC 3986 §6 normalised, tracking params dropped), or null if unparsable. */
  url: string | null;
  /** User-Agent header ('' if none): tells agents of a mesh apart. */
  userAgent: string;
  /** The request carried If-None-Match or If-Modified-Since. */
  conditional: boolean;
}

export interface TrapUrls {
  calendar?: string;
  pager?: string;
  sessionIds?: string;
  slowForever?: string;
  gzipBomb?: string;
  malformedHtml?: string;
  pdf?: string;
  image?: string;
  binaryAsHtml?: string;
  redirectLoop?: string;
  selfRedirect?: string;
  endlessRedirects?: string;
}

export interface ReachableOptions {
  /** Start URLs (canonical). Default: the root of every graph host. */
  seeds?: string[];
  /** Product token robots.txt groups are matched on. Default 'ubicrawl'. */
  userAgent?: string;
  /** Skip rel="nofollow" links. Default false. */
  obeyNofollow?: boolean;
  /** Also start from every URL in the /sitemap.xml of each host the crawl touches. Default false. */
  viaSitemaps?: boolean;
  /**
   * Treat 429 pages as eventually served (a crawler that retries them, with
   * `tooManyRecoverAfter` finite): their links count. Default false.
   */
  tooManyRecovers?: boolean;
}

/** What the server answers for one URL, as the oracle sees it. */
export interface UrlInfo {
  url: string;
  status: number;
  kind: 'page' | 'exactDup' | 'nearDup' | 'moved' | 'redirect' | 'notFound' | 'serverError' | 'tooMany' |
    'robots' | 'sitemap' | 'missing' | 'trap';
  /** Absolute target of a 3xx. */
  location?: string;
  /** Canonical link targets (for HTML pages). */
  links: { url: string; nofollow: boolean }[];
  /** For 429 pages: the links the page has once it serves normally (see `tooManyRecoverAfter`). */
  linksOnceServed?: { url: string; nofollow: boolean }[];
}

export interface Reachability {
  /** Every URL a link-following crawler that ignores robots.txt fetches: pages, error pages, redirect hops and targets. */
  reachable: Set<string>;
  /** What a crawler obeying robots.txt fetches (disallowed URLs are neither fetched nor expanded). */
  reachableAllowed: Set<string>;
  /** URLs the obeying crawler discovers but must not fetch. */
  disallowed: Set<string>;
  /** Status the server answers, for every URL in `reachable`. */
  status: Map<string, number>;
  /** URLs in `reachable` that answer 3xx. */
  redirects: Set<string>;
  /** URLs in `reachable` that answer 4xx/5xx. */
  errors: Set<string>;
  /** Hosts (names) with at least one discovered URL in the obeying crawl: their robots.txt is fetched. */
  hostsTouched: Set<string>;
  /** Trap entry URLs linked from the graph (never in `reachable`). */
  traps: Set<string>;
}

export interface Violation {
  /** Host name or IP address the rule is kept for. */
  key: string;
  kind: 'tooClose' | 'concurrent';
  first: RequestRecord;
  second: RequestRecord;
  /** second.start − (first.start or first.end, per `measure`). */
  gapMs: number;
}
