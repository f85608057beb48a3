// Client side of the agent API for the CLI (`ubicrawl status | seed | leave | inspect`):
// one request helper and human-readable formatters; `--json` prints the answer as is.
// The run* functions return exit codes (0 success, 1 runtime failure, 2 usage error)
// and write one clear line on stderr when something fails (docs/cli.md).
import { readFileSync } from 'node:fs';
import { DEFAULT_API_LISTEN, type PolicyReport, type HostReport, type SeedResult, type StatusResponse, type UrlReport, type WaitingReport } from './backend.js';
import { isLoopbackHost } from './server.js';
import { apiTokenPath, readTokenFileIfPresent } from './token.js';
import { DEFAULT_DATA_DIR } from '../config.js';

export interface ClientOptions {
  /** `HOST:PORT`, `:PORT`, `PORT` or `http://HOST:PORT`. Default 127.0.0.1:7070. */
  api?: string;
  /** File holding the bearer token. */
  tokenFile?: string;
  /**
   * Data dir of an agent on this machine: without `token` or `tokenFile`, its `api.token` is sent to a
   * loopback API (never to another machine). Default ./ubicrawl-data, as for `join`.
   */
  dataDir?: string;
  /** The token itself (wins over `tokenFile`). */
  token?: string;
  /** Print the API's JSON answer instead of the human-readable form. */
  json?: boolean;
  timeoutMs?: number;
  /** Output streams (tests capture them); default process.stdout / process.stderr. */
  stdout?: { write(s: string): unknown };
  stderr?: { write(s: string): unknown };
}

/** A request that did not succeed: `status` is the HTTP status, 0 when the API could not be reached. */
export class ApiRequestError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'ApiRequestError';
  }
}

/** The base URL of an API address as the CLI accepts it. */
export function apiBaseUrl(api: string = DEFAULT_API_LISTEN): string {
  const s = api.trim();
  if (/^https?:\/\//i.test(s)) return s.replace(/\/+$/, '');
  if (/^\d+$/.test(s)) return `http://127.0.0.1:${s}`;
  if (s.startsWith(':')) return `http://127.0.0.1${s}`;
  return `http://${s}`;
}

/** Sends one API request; resolves to the decoded JSON (or text) answer, throws `ApiRequestError` otherwise. */
export async function apiRequest<T = unknown>(api: string, method: string, path: string, body?: unknown, token?: string, timeoutMs = 10_000): Promise<T> {
  const base = apiBaseUrl(api);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new ApiRequestError(0, `cannot reach the agent API at ${base}: ${why} (is an agent running with --api ${api}?)`);
  }
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    try { parsed = JSON.parse(text); } catch { /* keep the text */ }
  }
  if (!res.ok) {
    const msg = parsed && typeof parsed === 'object' && typeof (parsed as { error?: unknown }).error === 'string'
      ? (parsed as { error: string }).error
      : `HTTP ${res.status}`;
    const hint = res.status === 401 ? " (give the token with --token-file, or the agent's --data-dir when it runs on this machine)" : '';
    throw new ApiRequestError(res.status, `${msg}${hint}`);
  }
  return parsed as T;
}

// ---- formatting helpers --------------------------------------------------

export function formatNumber(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-';
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s % 60}s`;
}

const rate = (n: number): string => (Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n.toFixed(1)) : '-');
const iso = (t: number | null | undefined): string => (typeof t === 'number' ? new Date(t).toISOString() : '-');
const shortId = (id: string): string => (id.length > 20 ? `${id.slice(0, 8)}…${id.slice(-8)}` : id);
// Crawled data (URLs, messages) reaches the terminal: control characters could rewrite it.
const clean = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

function kinds(c: Record<string, number>): string {
  const e = Object.entries(c).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  return e.length ? e.map(([k, v]) => `${k} ${formatNumber(v)}`).join(', ') : 'none';
}

/** Left-aligned columns; columns listed in `right` are right-aligned. */
function table(head: string[], rows: string[][], right: number[] = []): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (right.includes(i) ? c.padStart(w[i]) : c.padEnd(w[i]))).join('  ').trimEnd();
  return [line(head), ...rows.map(line)];
}

function kv(pairs: Array<[string, string]>): string[] {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(w)}  ${v}`);
}

/** "2 hosts, 14 URLs: a.example robots-retry at 12:00:05Z, …" (hosts in backoff or awaiting a robots.txt retry). */
export function formatWaiting(w: WaitingReport, shown = 3): string {
  const some = w.list.slice(0, shown).map((d) => `${clean(d.host)} ${d.reason} until ${d.nextAttempt === null ? 'resumed' : `${d.nextAttempt.slice(11, 19)}Z`}`);
  return `${w.hosts} host${w.hosts === 1 ? '' : 's'}, ${formatNumber(w.urls)} URLs: ${some.join(', ')}${w.hosts > shown ? ', …' : ''}`;
}

export function formatStatus(s: StatusResponse): string {
  const a = s.agent, c = a.counters;
  const out: string[] = [];
  out.push(`agent ${a.id}  ${a.state}  up ${formatDuration(a.uptimeMs)}  v${a.version}`);
  out.push(...kv([
    ['fetched', `${formatNumber(c.fetched)} pages (${rate(c.pagesPerSecond)}/s), ${formatBytes(c.bytes)}`],
    ['queued', `${formatNumber(c.queued)}, in flight ${formatNumber(c.inFlight)}`],
    ['exchanged', `${formatNumber(c.urlsSent)} URLs sent, ${formatNumber(c.urlsReceived)} received`],
    ['errors', kinds(c.errors)],
    ...(a.waiting && a.waiting.hosts > 0 ? [['waiting for', formatWaiting(a.waiting)] as [string, string]] : []),
  ]).map((l) => '  ' + l));
  const members = [...s.mesh.members].sort((p, q) => Number(q.self) - Number(p.self) || (p.id < q.id ? -1 : 1));
  out.push('');
  out.push(`mesh: ${members.length} member${members.length === 1 ? '' : 's'}${s.mesh.crawlId ? ` (crawl ${s.mesh.crawlId})` : ''}`);
  if (members.length) {
    out.push(...table(
      ['MEMBER', 'STATE', 'CAPACITY', 'SHARE', 'FETCHED', 'QUEUED', 'SENT', 'RECEIVED', 'LAST SEEN'],
      members.map((m) => [
        shortId(m.id) + (m.self ? ' *' : ''), m.state, formatNumber(m.capacity), `${(m.share * 100).toFixed(1)}%`,
        formatNumber(m.counters.fetched), formatNumber(m.counters.queued), formatNumber(m.counters.sent), formatNumber(m.counters.received),
        m.self || m.lastSeen === null ? '-' : `${formatDuration(s.now - m.lastSeen)} ago`,
      ]),
      [2, 3, 4, 5, 6, 7],
    ).map((l) => '  ' + l));
    out.push('  (* this agent)');
  }
  const zones = s.mesh.zones ?? [];
  if (zones.some((z) => z.zone !== '')) {
    // docs/mesh.md "Zones": who owns what share per zone, and what this agent sent to each.
    out.push('', 'zones:');
    out.push(...table(['ZONE', 'MEMBERS', 'OWNING', 'SHARE', 'URLS SENT', ''], zones.map((z) => [
      clean(z.zone || '(none)') + (z.self ? ' *' : ''), formatNumber(z.members), formatNumber(z.owners), `${(z.share * 100).toFixed(1)}%`, formatNumber(z.forwarded),
      z.rulesMismatch ? `${z.rulesMismatch} with other --zone-rule lists` : '',
    ]), [1, 2, 3, 4]).map((l) => '  ' + l));
  }
  if (s.topHosts?.length) {
    out.push('', 'top hosts:');
    out.push(...table(['HOST', 'FETCHED', 'QUEUED', 'ERRORS', ''], s.topHosts.map((h) => [
      clean(h.host), formatNumber(h.fetched), formatNumber(h.queued), formatNumber(h.errors), h.paused ? 'paused' : '',
    ]), [1, 2, 3]).map((l) => '  ' + l));
  }
  if (s.recentErrors?.length) {
    out.push('', 'recent errors:');
    for (const e of s.recentErrors.slice(0, 5)) out.push(`  ${iso(e.at)}  ${clean(e.kind)}  ${clean(e.url ?? e.host ?? '-')}  ${clean(e.message)}`);
  }
  return out.join('\n') + '\n';
}

export function formatSeedResult(r: SeedResult): string {
  const out: string[] = [];
  const routed = Object.entries(r.routed).sort((a, b) => b[1] - a[1]);
  out.push(`accepted ${formatNumber(r.accepted)} URL${r.accepted === 1 ? '' : 's'}` + (routed.length ? `: ${routed.map(([p, n]) => `${formatNumber(n)} to ${shortId(p)}`).join(', ')}` : ''));
  if (r.rejected.length) {
    out.push(`rejected ${formatNumber(r.rejected.length)}:`);
    for (const x of r.rejected) out.push(`  ${clean(x.url)}: ${clean(x.reason)}${x.detail ? ` (${clean(x.detail)})` : ''}`);
  }
  return out.join('\n') + '\n';
}

export function formatUrlReport(r: UrlReport): string {
  const f = r.fetched;
  const pairs: Array<[string, string]> = [
    ['url', clean(r.normalized)],
    ['owner', `${r.owner ?? '-'}${r.local ? ' (this agent)' : ''}`],
    ['state', r.state],
    ['seen', r.seen ? 'yes' : 'no'],
    ['queued', r.queued ? 'yes' : 'no'],
  ];
  if (f) {
    pairs.push(['fetched', `${iso(f.at)}  HTTP ${f.status}`]);
    pairs.push(['digest', f.digest ?? '-']);
    pairs.push(['simhash', f.simhash ?? '-']);
    pairs.push(['warc', f.warc ? `${f.warc.filename}  offset ${f.warc.offset}  length ${f.warc.length}` : '-']);
  } else {
    pairs.push(['fetched', 'no']);
  }
  if (!r.local && r.owner) pairs.push(['note', 'another agent owns this URL: ask its API for the fetch details']);
  return kv(pairs).join('\n') + '\n';
}

/** One line for a host's adaptive politeness: why it waits, backoff, failures, pauses, parking. */
function adaptiveLine(a: NonNullable<HostReport['politeness']>['adaptive'] & object): string {
  if (a.parked) return `PARKED (${clean(a.parkReason ?? 'failing')})`;
  const parts = [`waiting for ${a.reason}`];
  if (a.backoffLevel > 0) parts.push(`backoff level ${a.backoffLevel}`);
  if (a.pausedForMs > 0) parts.push(`paused ${Math.ceil(a.pausedForMs / 1000)} s more, then a probe`);
  parts.push(`${a.requests} requests, ${a.failures} failures, ${a.tooMany} × 429, ${a.unavailable} × 503, ${a.pausesTotal} pauses`);
  return parts.join(', ');
}

export function formatHostReport(h: HostReport): string {
  const out: string[] = [];
  const p = h.politeness, rb = h.robots;
  out.push(...kv([
    ['host', clean(h.host)],
    ['owner', `${h.owner ?? '-'}${h.local ? ' (this agent)' : ''}`],
    ['queue', `${formatNumber(h.queue.depth)} URLs${h.queue.inFlight ? ', fetching now' : ''}`],
    ['robots.txt', rb
      ? `${rb.state}${rb.status !== null ? ` (HTTP ${rb.status})` : ''}, fetched ${iso(rb.fetchedAt)}, expires ${iso(rb.expiresAt)}`
      : '-'],
    ...(rb ? [[
      'rules', `${rb.ruleCount} in group ${rb.group ?? '(none)'}${rb.crawlDelaySeconds !== null ? `, crawl-delay ${rb.crawlDelaySeconds}s` : ''}`,
    ] as [string, string]] : []),
    ['politeness', p
      ? `${p.paused ? 'PAUSED, ' : ''}delay ${p.delayMs} ms (min ${p.minDelayMs}, crawl-delay ${p.crawlDelayMs}, last response ${p.lastResponseMs} ms), next ${iso(p.nextAllowedAt)}`
      : '-'],
    ...(p?.adaptive ? [['backpressure', adaptiveLine(p.adaptive)] as [string, string]] : []),
    ...(p ? [['pages', `${formatNumber(p.pages)}${p.pageBudget !== null ? ` of budget ${formatNumber(p.pageBudget)}` : ''}, error run ${p.errorRun}`] as [string, string]] : []),
    ['errors', kinds(h.errors)],
  ]));
  if (rb && rb.rules.length) {
    out.push('', 'robots rules:');
    for (const r of rb.rules.slice(0, 20)) out.push(`  ${r.allow ? 'Allow:   ' : 'Disallow:'} ${clean(r.pattern)}`);
    if (rb.ruleCount > 20) out.push(`  … ${rb.ruleCount - 20} more (--json shows ${rb.rules.length})`);
  }
  if (h.lastFetches.length) {
    out.push('', 'last fetches:');
    for (const f of h.lastFetches) out.push(`  ${iso(f.at)}  ${f.status ?? clean(f.error ?? 'error')}  ${clean(f.url)}`);
  }
  return out.join('\n') + '\n';
}

// ---- commands ------------------------------------------------------------

function tokenOf(opts: ClientOptions): string | undefined {
  if (opts.token) return opts.token;
  if (opts.tokenFile) {
    try { return readFileSync(opts.tokenFile, 'utf8').trim(); } catch (err) {
      throw new ApiRequestError(-2, `cannot read the token file ${opts.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return localAgentToken(opts.api ?? DEFAULT_API_LISTEN, opts.dataDir ?? DEFAULT_DATA_DIR);
}

/**
 * The token an agent on this machine made in its data dir (`api.token`), for an API address on
 * loopback only: it is never sent to another machine. Undefined when there is none to read.
 */
export function localAgentToken(api: string, dataDir: string): string | undefined {
  let host: string;
  try { host = new URL(apiBaseUrl(api)).hostname; } catch { return undefined; }
  if (!isLoopbackHost(host)) return undefined;
  try {
    return readTokenFileIfPresent(apiTokenPath(dataDir));
  } catch {
    return undefined; // unreadable here (another user's agent): read-only commands still work, changes get a 401 with a hint
  }
}

/** Runs one command body; maps failures to exit codes and one line on stderr. */
async function run(opts: ClientOptions, body: (token: string | undefined) => Promise<void>): Promise<number> {
  const err = opts.stderr ?? process.stderr;
  try {
    await body(tokenOf(opts));
    return 0;
  } catch (e) {
    if (e instanceof ApiRequestError) {
      err.write(`ubicrawl: ${e.message}\n`);
      // The request itself was wrong (bad URL, bad host name, too large): a usage error.
      return e.status === -2 || e.status === 400 || e.status === 413 || e.status === 415 ? 2 : 1;
    }
    err.write(`ubicrawl: ${(e as Error).message}\n`);
    return 1;
  }
}

const print = (opts: ClientOptions, s: string): void => { (opts.stdout ?? process.stdout).write(s); };
const printJson = (opts: ClientOptions, v: unknown): void => print(opts, JSON.stringify(v, null, 2) + '\n');

/** `ubicrawl status`. */
export function runStatus(opts: ClientOptions = {}): Promise<number> {
  return run(opts, async (token) => {
    const s = await apiRequest<StatusResponse>(opts.api ?? DEFAULT_API_LISTEN, 'GET', '/status', undefined, token, opts.timeoutMs);
    if (opts.json) printJson(opts, s); else print(opts, formatStatus(s));
  });
}

/** `ubicrawl seed <url…>`: exit 1 when the agent rejected some of them. */
export async function runSeed(urls: string[], opts: ClientOptions = {}): Promise<number> {
  if (urls.length === 0) {
    (opts.stderr ?? process.stderr).write('ubicrawl: give at least one URL to seed\n');
    return 2;
  }
  let rejected = 0;
  const code = await run(opts, async (token) => {
    const r = await apiRequest<SeedResult>(opts.api ?? DEFAULT_API_LISTEN, 'POST', '/seeds', { urls }, token, opts.timeoutMs);
    rejected = r.rejected.length;
    if (opts.json) printJson(opts, r); else print(opts, formatSeedResult(r));
  });
  return code === 0 && rejected > 0 ? 1 : code;
}

export interface LeaveOptions extends ClientOptions {
  /** Wait until the agent has gone (its API stops answering). */
  wait?: boolean;
  /** How long to wait with `wait`. Default 10 minutes. */
  waitTimeoutMs?: number;
}

/** `ubicrawl leave`: asks the agent to hand off its hosts and exit. */
export function runLeave(opts: LeaveOptions = {}): Promise<number> {
  return run(opts, async (token) => {
    const api = opts.api ?? DEFAULT_API_LISTEN;
    const r = await apiRequest<{ state: string }>(api, 'POST', '/leave', undefined, token, opts.timeoutMs);
    if (!opts.wait) {
      if (opts.json) printJson(opts, r); else print(opts, 'leaving: the agent hands its hosts to their new owners, then exits\n');
      return;
    }
    const deadline = Date.now() + (opts.waitTimeoutMs ?? 600_000);
    for (;;) {
      await new Promise((res) => setTimeout(res, 500));
      try {
        await apiRequest(api, 'GET', '/status', undefined, token, 2000);
      } catch (e) {
        if (e instanceof ApiRequestError && e.status === 0) break; // gone
        throw e;
      }
      if (Date.now() > deadline) throw new Error('the agent is still running after the wait timeout');
    }
    if (opts.json) printJson(opts, { state: 'left' }); else print(opts, 'the agent has left the mesh\n');
  });
}

/** `ubicrawl inspect <url-or-host>`: a target with a scheme (or a slash) is a URL, anything else a host name. */
export function runInspect(target: string, opts: ClientOptions = {}): Promise<number> {
  return run(opts, async (token) => {
    const api = opts.api ?? DEFAULT_API_LISTEN;
    const t = target.trim();
    if (!t) throw new ApiRequestError(-2, 'give a URL or a host name to inspect');
    const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(t);
    if (hasScheme || t.includes('/')) {
      const url = hasScheme ? t : `http://${t}`;
      const r = await apiRequest<UrlReport>(api, 'GET', `/urls?url=${encodeURIComponent(url)}`, undefined, token, opts.timeoutMs);
      if (opts.json) printJson(opts, r); else print(opts, formatUrlReport(r));
    } else {
      const r = await apiRequest<HostReport>(api, 'GET', `/hosts/${encodeURIComponent(t.toLowerCase())}`, undefined, token, opts.timeoutMs);
      if (opts.json) printJson(opts, r); else print(opts, formatHostReport(r));
    }
  });
}

// ---- the crawl policy (docs/scope.md "Mesh-wide policy") -------------------

/** `ubicrawl policy` and the answer of `block` / `unblock`: the version in force here and on each member, the rules. */
export function formatPolicy(p: PolicyReport): string {
  const out: string[] = [];
  const sc = p.scope;
  out.push(`policy ${p.summary}${p.updatedAt ? ` (changed ${iso(p.updatedAt)})` : ''}`);
  out.push(`scope: ${sc.mode}${sc.allowHosts.length ? `, allow ${sc.allowHosts.map(clean).join(' ')}` : ''}${p.scopeOrigin ? ` (set by ${clean(p.scopeOrigin)})` : ''}`);
  const filters = [
    ...sc.include.map((r) => `include ${clean(r)}`), ...sc.exclude.map((r) => `exclude ${clean(r)}`),
    ...(sc.maxDepth ? [`max depth ${sc.maxDepth}`] : []), ...(sc.maxPagesPerHost ? [`max ${formatNumber(sc.maxPagesPerHost)} pages a host`] : []),
    ...(sc.acceptTypes.length ? [`store ${sc.acceptTypes.map(clean).join(', ')}`] : []),
  ];
  if (filters.length) out.push(`filters: ${filters.join('; ')}`);
  if (sc.mode !== 'web') out.push(`seed units: ${p.seedUnits.length ? p.seedUnits.slice(0, 10).map(clean).join(' ') + (p.seedUnits.length > 10 ? ` … (${p.seedUnits.length})` : '') : 'none'}`);
  out.push(`blocked: ${p.blocks.length ? '' : 'nothing'}`);
  for (const b of p.blocks) out.push(`  ${b.kind.padEnd(6)} ${clean(b.value)}${b.reason ? `  (${clean(b.reason)})` : ''}`);
  if (p.members.length > 1) {
    out.push('members:');
    for (const m of p.members) out.push(`  ${shortId(m.id)}${m.self ? ' (this agent)' : ''}  ${m.summary ?? 'none announced'}${m.self || m.same ? '' : '  (differs: catching up)'}`);
  }
  return out.join('\n') + '\n';
}

/** `ubicrawl policy`: the crawl policy in force (`GET /policy`). */
export function runPolicy(opts: ClientOptions = {}): Promise<number> {
  return run(opts, async (token) => {
    const p = await apiRequest<PolicyReport>(opts.api ?? DEFAULT_API_LISTEN, 'GET', '/policy', undefined, token, opts.timeoutMs);
    if (opts.json) printJson(opts, p); else print(opts, formatPolicy(p));
  });
}

/** `ubicrawl block|unblock <target…>`: changes the block list mesh-wide through one agent. */
export async function runBlock(action: 'block' | 'unblock', targets: string[], opts: ClientOptions & { reason?: string } = {}): Promise<number> {
  if (targets.length === 0) {
    (opts.stderr ?? process.stderr).write(`ubicrawl: give at least one host, domain or URL pattern to ${action}\n`);
    return 2;
  }
  return run(opts, async (token) => {
    const body = action === 'block' ? { targets, reason: opts.reason ?? '' } : { targets };
    const p = await apiRequest<PolicyReport>(opts.api ?? DEFAULT_API_LISTEN, 'POST', `/policy/${action}`, body, token, opts.timeoutMs);
    if (opts.json) printJson(opts, p); else print(opts, formatPolicy(p));
  });
}
