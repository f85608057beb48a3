// The agent's HTTP API (docs/operations.md) on node:http, no framework: a fixed route
// table, JSON in and out, every input validated before the backend sees it.
//
// Security model (docs/operations.md "API security"):
// - the mutating routes (every method but GET and HEAD) always need the bearer
//   token, `Authorization: Bearer …`, compared in constant time; a server
//   without a token refuses them;
// - loopback by default; any other listen address needs a bearer token file, and
//   then every request but the static dashboard shell (`GET /`, which holds no
//   data and asks for the token itself) must carry the token; on loopback the
//   read-only routes may stay open (`openReads`);
// - while reads are open, the Host header must name a loopback address, so a web
//   page cannot reach the API through DNS rebinding; in every mode a request
//   whose Origin is not the API's own is refused, so a page cannot drive the API
//   from a visitor's browser (cross-site request forgery);
// - bodies are limited (413), JSON bodies must say so in Content-Type (415), and
//   the server's header and request timeouts are short.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import { statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ApiError, DEFAULT_API_LISTEN, type ApiBackend, type HostPolicy, type StatusResponse } from './backend.js';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard.js';
import { readTokenFile } from './token.js';
import { silentLogger, type Logger } from '../util/log.js';
import { unbracketHost } from '../url/host.js';

export interface ApiServerOptions {
  /** `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (the last two mean 127.0.0.1). Port 0 picks a free one. */
  listen: string;
  /** File holding the bearer token (surrounding whitespace ignored). Required unless the listen host is loopback. */
  tokenFile?: string;
  /**
   * With a token on a loopback listen address: the read-only routes answer without it (the mutating
   * ones still need it). Ignored beyond loopback, where every route needs the token.
   */
  openReads?: boolean;
  /** What the routes serve; may be attached later (`attach`), requests are answered 503 until then. */
  backend?: ApiBackend;
  logger?: Logger;
  /** Request body limit in bytes (413 beyond). Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface ApiServer {
  /** Base URL, e.g. `http://127.0.0.1:7070`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Whether read-only requests must carry the bearer token (mutating ones always must). */
  readonly authRequired: boolean;
  /** Sets the backend of a server started without one. */
  attach(backend: ApiBackend): void;
  close(): Promise<void>;
}

export { DEFAULT_API_LISTEN };
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** A seed request may carry this many URLs at most. */
export const MAX_SEED_URLS = 10_000;
/** Longest URL accepted anywhere in the API (browsers and servers commonly stop near 8 KiB). */
export const MAX_URL_LENGTH = 8192;
/** Most block rules one `POST /policy/block` or `/policy/unblock` names. */
export const MAX_POLICY_TARGETS = 1_000;
const MAX_DELAY_MS = 24 * 3600 * 1000;
const MAX_PAGE_BUDGET = 1_000_000_000;
/** A declared body this far past the limit is not drained: the connection is closed instead. */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

/** Splits a listen address; throws a clear Error on anything else. */
export function parseListen(listen: string): { host: string; port: number } {
  const s = listen.trim();
  let host: string;
  let portText: string;
  const m6 = /^\[([0-9a-fA-F:.]+(?:%[\w.-]+)?)\]:(\d+)$/.exec(s);
  if (m6) { host = m6[1]; portText = m6[2]; if (isIP(host) !== 6) throw new Error(`invalid API listen address "${listen}": bad IPv6 address`); }
  else if (/^\d+$/.test(s)) { host = '127.0.0.1'; portText = s; }
  else {
    const i = s.lastIndexOf(':');
    if (i < 0) throw new Error(`invalid API listen address "${listen}": expected HOST:PORT`);
    host = s.slice(0, i) || '127.0.0.1';
    portText = s.slice(i + 1);
    if (host.includes(':')) throw new Error(`invalid API listen address "${listen}": write IPv6 addresses as [ADDR]:PORT`);
    if (!/^[A-Za-z0-9.-]+$/.test(host)) throw new Error(`invalid API listen address "${listen}": bad host`);
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw new Error(`invalid API listen address "${listen}": port must be 0-65535`);
  return { host, port: Number(portText) };
}

/** 127.0.0.0/8, ::1, their IPv4-mapped form, and `localhost` (RFC 6761 §6.3). */
export function isLoopbackHost(host: string): boolean {
  let h = unbracketHost(host.toLowerCase());
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h.startsWith('::ffff:')) h = h.slice(7);
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^(0{0,4}:){7}0{0,3}1$/.test(h);
  return false;
}

/** Throws unless `host` is loopback or a token will be required (no open API beyond this machine: docs/operations.md "API security"). */
export function assertListenAllowed(host: string, hasToken: boolean): void {
  if (!hasToken && !isLoopbackHost(host)) {
    throw new Error(`refusing to serve the API on ${host}, which is not a loopback address, without a bearer token: give a token file (--api-token-file FILE), or listen on 127.0.0.1`);
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** The host name in a `/hosts/:host` path, canonical (lower case, IDNA, no port), or an ApiError. */
export function canonicalHost(segment: string): string {
  let h: string;
  try { h = decodeURIComponent(segment); } catch { throw new ApiError(400, 'host: malformed percent-encoding'); }
  if (h.length === 0 || h.length > 300) throw new ApiError(400, 'host: expected a host name');
  if (/[\s/?#@\\%]/.test(h) || (h.includes(':') && !(h.startsWith('[') && h.endsWith(']')))) {
    throw new ApiError(400, 'host: give a bare host name (no scheme, port, path or user)');
  }
  let u: URL;
  try { u = new URL(`http://${h}/`); } catch { throw new ApiError(400, `host: "${h}" is not a valid host name`); }
  if (!u.hostname || u.port !== '' || u.hostname.length > 255) throw new ApiError(400, `host: "${h}" is not a valid host name`);
  return u.hostname;
}

function checkUrl(raw: unknown, what: string): string {
  if (typeof raw !== 'string' || raw.length === 0) throw new ApiError(400, `${what}: expected a URL string`);
  if (raw.length > MAX_URL_LENGTH) throw new ApiError(400, `${what}: longer than ${MAX_URL_LENGTH} characters`);
  let u: URL;
  try { u = new URL(raw); } catch { throw new ApiError(400, `${what}: not an absolute URL`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ApiError(400, `${what}: only http and https URLs are crawled`);
  return raw;
}

function intOrNull(v: unknown, name: string, max: number): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) throw new ApiError(400, `${name}: expected a whole number 0-${max} or null`);
  return v;
}

function onlyKeys(o: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new ApiError(400, `unknown field "${k}" (expected ${allowed.join(', ')})`);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      // Refuse at once; the rest of the body is drained (or the connection closed) by the caller.
      reject(new ApiError(413, `request body larger than ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return; // keep draining so the client can read the answer
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        reject(new ApiError(413, `request body larger than ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => { if (!over) resolve(Buffer.concat(chunks, size)); });
    req.on('error', reject);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function readJsonObject(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const ct = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (ct !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(ct)) {
    // Reading is still needed so the connection can be reused.
    req.resume();
    throw new ApiError(415, 'send the body as JSON with Content-Type: application/json');
  }
  const body = await readBody(req, limit);
  let text: string;
  try { text = utf8.decode(body); } catch { throw new ApiError(400, 'malformed JSON: body is not valid UTF-8'); }
  let value: unknown;
  try { value = JSON.parse(text); } catch (err) { throw new ApiError(400, `malformed JSON: ${(err as Error).message}`); }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ApiError(400, 'the body must be a JSON object');
  return value as Record<string, unknown>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, params: { host?: string; query: URLSearchParams }) => Promise<void>;

interface Route {
  /** Matched against the path; capture group 1, if any, is the host. */
  pattern: RegExp;
  methods: Record<string, Handler>;
}

export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const { host, port } = parseListen(opts.listen);
  const log = opts.logger ?? silentLogger;
  const limit = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  assertListenAllowed(host, opts.tokenFile !== undefined);
  const token = opts.tokenFile ? readTokenFile(opts.tokenFile) : undefined;
  if (opts.tokenFile) {
    try {
      if ((statSync(opts.tokenFile).mode & 0o077) !== 0) log.warn({ file: opts.tokenFile }, 'the API token file is readable by other users: chmod 600 it');
    } catch { /* read above already succeeded */ }
  }
  const tokenDigest = token ? digest(token) : undefined;
  const readsOpen = !tokenDigest || (opts.openReads === true && isLoopbackHost(host));
  let attached = opts.backend;
  // Until `attach`, every use answers 503: the agent binds its API before anything else starts
  // (src/crawl/preflight.ts) and attaches itself once it runs.
  const backend = new Proxy({} as ApiBackend, {
    get(_target, key) {
      if (!attached) throw new ApiError(503, 'the agent is starting: try again in a moment');
      const value: unknown = Reflect.get(attached, key);
      return typeof value === 'function' ? value.bind(attached) : value;
    },
  });

  const sendJson = (req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body) + '\n';
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  };

  const hostParam = (p: { host?: string }): string => canonicalHost(p.host ?? '');

  const routes: Route[] = [
    {
      pattern: /^\/$/,
      methods: {
        GET: async (req, res) => {
          res.writeHead(200, {
            'content-type': 'text/html; charset=utf-8',
            'content-length': Buffer.byteLength(DASHBOARD_HTML),
            'cache-control': 'no-store',
            'content-security-policy': DASHBOARD_CSP,
            'x-content-type-options': 'nosniff',
            'x-frame-options': 'DENY',
            'referrer-policy': 'no-referrer',
          });
          res.end(req.method === 'HEAD' ? undefined : DASHBOARD_HTML);
        },
      },
    },
    {
      pattern: /^\/status$/,
      methods: {
        GET: async (req, res, { query }) => {
          const nHosts = countParam(query, 'hosts', 10);
          const nErrors = countParam(query, 'errors', 20);
          const report = backend.status();
          const body: StatusResponse = {
            ...report,
            now: Date.now(),
            throughput: backend.throughputHistory(),
            topHosts: backend.topHosts(nHosts),
            recentErrors: backend.recentErrors(nErrors),
          };
          sendJson(req, res, 200, body);
        },
      },
    },
    {
      pattern: /^\/metrics$/,
      methods: {
        GET: async (req, res) => {
          const text = await backend.metrics.render();
          res.writeHead(200, { 'content-type': backend.metrics.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
      },
    },
    {
      pattern: /^\/urls$/,
      methods: {
        GET: async (req, res, { query }) => {
          const all = query.getAll('url');
          if (all.length !== 1) throw new ApiError(400, 'give exactly one url query parameter: /urls?url=…');
          const url = checkUrl(all[0], 'url');
          const report = await backend.url(url);
          if (!report) throw new ApiError(400, `url: ${url} is not a crawlable URL`);
          sendJson(req, res, 200, report);
        },
      },
    },
    {
      pattern: /^\/seeds$/,
      methods: {
        POST: async (req, res) => {
          const body = await readJsonObject(req, limit);
          onlyKeys(body, ['urls']);
          const urls = body.urls;
          if (!Array.isArray(urls) || urls.length === 0) throw new ApiError(400, 'urls: expected a non-empty array of URL strings');
          if (urls.length > MAX_SEED_URLS) throw new ApiError(400, `urls: at most ${MAX_SEED_URLS} per request`);
          for (let i = 0; i < urls.length; i++) {
            const u = urls[i];
            if (typeof u !== 'string' || u.length === 0 || u.length > MAX_URL_LENGTH) throw new ApiError(400, `urls[${i}]: expected a URL string of 1-${MAX_URL_LENGTH} characters`);
          }
          const result = await backend.seed(urls as string[]);
          const blocked = result.rejected.filter((r) => r.reason === 'blocked-address');
          if (result.accepted === 0 && blocked.length > 0) {
            // Nothing was taken and at least one URL points inward (docs/operations.md "Internal addresses").
            const first = blocked[0]!;
            const error = `no URL accepted: ${first.url} is refused (blocked-address: ${first.detail ?? 'internal address'})` +
              (result.rejected.length > 1 ? `; ${result.rejected.length - 1} more refused, see "rejected"` : '');
            sendJson(req, res, 400, { error, ...result });
            return;
          }
          sendJson(req, res, 200, result);
        },
      },
    },
    {
      pattern: /^\/policy$/,
      methods: { GET: async (req, res) => sendJson(req, res, 200, policyBackend(backend).policy()) },
    },
    {
      pattern: /^\/policy\/(block|unblock)$/,
      methods: {
        POST: async (req, res, p) => {
          const body = await readJsonObject(req, limit);
          const blocking = p.host === 'block';
          onlyKeys(body, blocking ? ['targets', 'reason'] : ['targets']);
          const targets = body.targets;
          if (!Array.isArray(targets) || targets.length === 0) throw new ApiError(400, 'targets: expected a non-empty array of hosts, domains or URL patterns');
          if (targets.length > MAX_POLICY_TARGETS) throw new ApiError(400, `targets: at most ${MAX_POLICY_TARGETS} per request`);
          for (let i = 0; i < targets.length; i++) {
            const t = targets[i];
            if (typeof t !== 'string' || t.length === 0 || t.length > MAX_URL_LENGTH) throw new ApiError(400, `targets[${i}]: expected a string of 1-${MAX_URL_LENGTH} characters`);
          }
          const reason = body.reason ?? '';
          if (typeof reason !== 'string' || reason.length > 500) throw new ApiError(400, 'reason: expected a string of at most 500 characters');
          const b = policyBackend(backend);
          sendJson(req, res, 200, blocking ? await b.block(targets as string[], reason) : await b.unblock(targets as string[]));
        },
      },
    },
    {
      pattern: /^\/leave$/,
      methods: {
        POST: async (req, res) => {
          req.resume();
          // The leave hands off this agent's hosts and may take a while: answer now, let it run.
          backend.leave().catch((err: Error) => log.error({ err: err.message }, 'leave failed'));
          sendJson(req, res, 202, { state: 'leaving' });
        },
      },
    },
    {
      pattern: /^\/hosts\/([^/]+)$/,
      methods: {
        GET: async (req, res, p) => {
          const name = hostParam(p);
          const report = await backend.host(name);
          if (!report) throw new ApiError(404, `nothing is known about host ${name}`);
          sendJson(req, res, 200, report);
        },
      },
    },
    {
      pattern: /^\/hosts\/([^/]+)\/pause$/,
      methods: { POST: async (req, res, p) => { const name = hostParam(p); req.resume(); sendJson(req, res, 200, await backend.pauseHost(name)); } },
    },
    {
      pattern: /^\/hosts\/([^/]+)\/resume$/,
      methods: { POST: async (req, res, p) => { const name = hostParam(p); req.resume(); sendJson(req, res, 200, await backend.resumeHost(name)); } },
    },
    {
      pattern: /^\/hosts\/([^/]+)\/policy$/,
      methods: {
        PUT: async (req, res, p) => {
          const name = hostParam(p);
          const body = await readJsonObject(req, limit);
          onlyKeys(body, ['minDelayMs', 'pageBudget']);
          const policy: HostPolicy = {};
          if ('minDelayMs' in body) policy.minDelayMs = intOrNull(body.minDelayMs, 'minDelayMs', MAX_DELAY_MS);
          if ('pageBudget' in body) policy.pageBudget = intOrNull(body.pageBudget, 'pageBudget', MAX_PAGE_BUDGET);
          if (Object.keys(policy).length === 0) throw new ApiError(400, 'give minDelayMs and/or pageBudget (a number, or null to clear)');
          sendJson(req, res, 200, await backend.setHostPolicy(name, policy));
        },
      },
    },
  ];

  const hasToken = (req: IncomingMessage): boolean => {
    if (!tokenDigest) return false;
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
    // Comparing fixed-length digests keeps the time independent of where the strings differ and of their lengths.
    return m !== null && timingSafeEqual(digest(m[1]), tokenDigest);
  };

  const refuse = (req: IncomingMessage, res: ServerResponse): never => {
    req.resume();
    res.setHeader('www-authenticate', 'Bearer realm="ubicrawl"');
    throw new ApiError(401, tokenDigest
      ? 'missing or wrong bearer token (Authorization: Bearer <token>)'
      : 'this API has no bearer token configured, so it accepts no changes');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    let url: URL;
    try {
      if (!req.url || !req.url.startsWith('/')) throw new Error('origin-form expected');
      url = new URL(req.url, 'http://api.invalid');
    } catch {
      req.resume();
      throw new ApiError(400, 'malformed request target');
    }
    const hostHeader = req.headers.host;
    if (readsOpen && hostHeader !== undefined) {
      let name = '';
      try { name = new URL(`http://${hostHeader}/`).hostname; } catch { /* stays empty: refused below */ }
      if (!isLoopbackHost(name)) { req.resume(); throw new ApiError(403, 'this API answers only requests addressed to a loopback host'); }
    }
    const origin = req.headers.origin;
    // Behind a TLS-terminating proxy the page's origin is https with the same Host.
    if (origin !== undefined && origin !== `http://${hostHeader ?? ''}` && origin !== `https://${hostHeader ?? ''}`) {
      req.resume();
      throw new ApiError(403, 'cross-origin requests are not allowed');
    }
    const path = url.pathname;
    const isShell = path === '/' && (method === 'GET' || method === 'HEAD');
    if (!isShell && !readsOpen && !hasToken(req)) refuse(req, res);
    for (const r of routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      const verb = method === 'HEAD' ? 'GET' : method;
      const h = r.methods[verb];
      if (!h) {
        req.resume();
        const allow = Object.keys(r.methods);
        if (allow.includes('GET')) allow.push('HEAD');
        res.setHeader('allow', allow.join(', '));
        throw new ApiError(405, `${method} is not allowed on ${path} (allowed: ${allow.join(', ')})`);
      }
      // Changing the crawl always takes the token, on loopback too: any local process or user could otherwise.
      if (verb !== 'GET' && !hasToken(req)) refuse(req, res);
      await h(req, res, { host: m[1], query: url.searchParams });
      return;
    }
    req.resume();
    throw new ApiError(404, `no such endpoint: ${path}`);
  };

  const server: Server = createServer((req, res) => {
    const t0 = Date.now();
    res.on('finish', () => log.debug({ method: req.method, path: req.url?.split('?')[0], status: res.statusCode, ms: Date.now() - t0 }, 'api request'));
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) { res.destroy(); return; }
      if (err instanceof ApiError) {
        if (err.status === 413) {
          // A client announcing far more than the limit is not waited for.
          const declared = Number(req.headers['content-length'] ?? 0);
          if (declared > DRAIN_LIMIT_BYTES) res.setHeader('connection', 'close');
          req.resume();
        }
        sendJson(req, res, err.status, { error: err.message });
        return;
      }
      log.error({ err: (err as Error)?.message, path: req.url?.split('?')[0] }, 'api request failed');
      req.resume();
      sendJson(req, res, 500, { error: 'internal error (see the agent log)' });
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 100;

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(new Error(`cannot serve the API on ${opts.listen}: ${err.code === 'EADDRINUSE' ? 'address in use' : err.code === 'EADDRNOTAVAIL' ? 'address not available on this machine' : err.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => { server.off('error', onError); resolve(); });
  });
  server.on('error', (err) => log.error({ err: err.message }, 'api server error'));
  const addr = server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  log.debug({ url: `http://${shownHost}:${addr.port}`, auth: !token ? 'none (loopback, read-only)' : readsOpen ? 'bearer for changes (loopback reads open)' : 'bearer' }, 'API listening');

  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${addr.port}`,
    host: addr.address,
    port: addr.port,
    authRequired: !readsOpen,
    attach(backend: ApiBackend) { attached = backend; },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Requests still running get a moment to finish.
        setTimeout(() => server.closeAllConnections(), 2000).unref();
      });
      return closing;
    },
  };
}

function countParam(q: URLSearchParams, name: string, dflt: number): number {
  const v = q.get(name);
  if (v === null) return dflt;
  if (!/^\d{1,3}$/.test(v) || Number(v) > 100) throw new ApiError(400, `${name}: expected a whole number 0-100`);
  return Number(v);
}

/** The backend's policy routes; 501 for a backend without a crawl policy. */
function policyBackend(b: ApiBackend): Required<Pick<ApiBackend, 'policy' | 'block' | 'unblock'>> {
  if (typeof b.policy !== 'function' || typeof b.block !== 'function' || typeof b.unblock !== 'function') throw new ApiError(501, 'this agent has no crawl policy');
  return b as Required<Pick<ApiBackend, 'policy' | 'block' | 'unblock'>>;
}
