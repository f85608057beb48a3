// A pool of headless Chromium pages that renders pages our fetcher already
// has, without letting the browser touch the network on its own: the page
// itself is served from our copy, and every other request the browser makes is
// intercepted (page.route), checked against robots.txt and scope (`allowed`),
// timed by the host's politeness clock (`acquire`/`release`), fetched by
// playwright's route.fetch and recorded for the archive (docs/render.md).
//
// One Chromium process (a "generation") serves every page; it is launched on
// the first render, replaced when it crashes (disconnected) or when its process
// tree outgrows the memory cap (the old one finishes its pages, then closes).
// Collaborators come in one `components` object so the crawl pipeline, tests
// and the bench inject their own.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { DEFAULT_RENDER, type RenderConfig } from '../config.js';

export interface RenderJob {
  /** Final URL of the page (after redirects): the document URL. */
  url: string;
  /** The response as our fetcher received it; the body decoded of any Content-Encoding. */
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  /** This page's budget where it differs from the pool's (a host rule, a retry). */
  limits?: Partial<Pick<RenderConfig, 'timeoutMs' | 'maxRequests' | 'maxBytes'>>;
}

export interface Subresource {
  url: string;
  method: string;
  status: number;
  /** Response headers as received (the body below is decoded of Content-Encoding). */
  headers: Array<{ name: string; value: string }>;
  contentType: string;
  body: Buffer;
}

export type RenderOutcome = 'rendered' | 'timeout' | 'budget' | 'crashed' | 'unavailable';

export interface RenderResult {
  url: string;
  outcome: RenderOutcome;
  /** The serialised DOM after the network went quiet (or at the deadline); '' when none was obtained. */
  dom: string;
  /** Absolute http(s) hrefs of a[href] and area[href] in the rendered DOM, fragment removed, first occurrence order. */
  links: string[];
  /** What the browser fetched, once per URL (a repeat is served from here, not fetched again). */
  subresources: Subresource[];
  /** Requests refused: not allowed (robots.txt, scope), over budget, or not http(s). */
  refused: number;
  ms: number;
  error?: string;
}

/** What the pool needs from the crawler. */
export interface RenderComponents {
  /** robots.txt, crawl scope and address policy for one URL the browser asks for. */
  allowed(url: string): boolean | Promise<boolean>;
  /**
   * Fetches one subresource the crawler's own way (its fetcher, its hosts' politeness clocks, its
   * archive: src/crawl/render-step.ts); undefined refuses the request. `deadline`: the render's end (epoch
   * ms). Without it the pool fetches with playwright's route.fetch, timed by `acquire`/`release`.
   */
  fetch?(url: string, method: string, deadline: number): Promise<Subresource | undefined>;
  /** Resolves when a request to `host` (URL host, with its port if any) may go: the host's politeness clock. */
  acquire?(host: string): Promise<void>;
  /** The request to `host` is over (the clock computes the next slot from here). */
  release?(host: string): void;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

export type RenderPoolConfig = Pick<RenderConfig,
  'concurrency' | 'timeoutMs' | 'networkIdleMs' | 'maxRequests' | 'maxBytes' | 'maxBrowserRssBytes' | 'chromiumPath'> & {
  userAgent: string;
};

export interface RenderPoolStats {
  launches: number;
  /** Browsers lost while in use (process died, disconnected). */
  crashes: number;
  /** Browsers replaced for exceeding the memory cap. */
  memoryRestarts: number;
  active: number;
  /** RSS of the current browser's process tree at the last check, bytes. */
  browserRssBytes: number;
  outcomes: Record<RenderOutcome, number>;
  available: boolean;
}

// Chromium switches: no background traffic of its own, and no name resolves inside it, so nothing
// leaves the browser except through page.route (route.fetch runs in this process).
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-extensions',
  '--disable-dev-shm-usage', '--mute-audio',
  '--host-resolver-rules=MAP * ~NOTFOUND',
];

// Headers that describe the transfer, not the body we hand back (decoded, complete).
const TRANSFER_HEADERS = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

const RSS_CHECK_EVERY_MS = 2_000;
const MAX_LAUNCH_FAILURES = 3;

interface Generation {
  browser: Browser;
  pid: number | undefined;
  active: number;
  retiring: boolean;
  dead: boolean;
}

export class RenderPool {
  private readonly cfg: RenderPoolConfig;
  private gen: Generation | undefined;
  private launching: Promise<Generation | undefined> | undefined;
  private unavailable: string | undefined;
  private launchFailures = 0;
  private lastLaunchError = '';
  private closed = false;
  private waiting: Array<() => void> = [];
  private lastRssCheck = 0;
  private readonly counters: RenderPoolStats = {
    launches: 0, crashes: 0, memoryRestarts: 0, active: 0, browserRssBytes: 0, available: true,
    outcomes: { rendered: 0, timeout: 0, budget: 0, crashed: 0, unavailable: 0 },
  };

  constructor(private readonly components: RenderComponents, config: Partial<RenderPoolConfig> & { userAgent: string }) {
    this.cfg = { ...DEFAULT_RENDER, ...config };
  }

  stats(): RenderPoolStats {
    return { ...this.counters, outcomes: { ...this.counters.outcomes }, available: this.unavailable === undefined };
  }

  /** pid of the current browser process (for tests and the memory check). */
  browserPid(): number | undefined {
    return this.gen?.dead === false ? this.gen.pid : undefined;
  }

  async render(job: RenderJob): Promise<RenderResult> {
    const started = Date.now();
    await this.slot();
    let gen: Generation | undefined;
    try {
      gen = this.closed ? undefined : await this.current();
      const result = gen === undefined
        ? this.empty(job, 'unavailable', started, this.unavailable ?? (this.closed ? 'pool closed' : this.lastLaunchError))
        : await this.renderOn(gen, job, started);
      this.counters.outcomes[result.outcome]++;
      return result;
    } finally {
      if (gen !== undefined) {
        gen.active--;
        this.afterRender(gen);
      }
      this.releaseSlot();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const g = this.gen;
    this.gen = undefined;
    if (g !== undefined && !g.dead) await g.browser.close().catch(() => {});
  }

  // --- concurrency ---------------------------------------------------------------------------

  private async slot(): Promise<void> {
    if (this.counters.active < this.cfg.concurrency) {
      this.counters.active++;
      return;
    }
    // The releasing render hands its slot over (active stays counted).
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private releaseSlot(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.counters.active--;
  }

  // --- browser lifecycle -----------------------------------------------------------------------

  /** The generation to render on (launched if needed), its `active` already counted; undefined: unavailable. */
  private async current(): Promise<Generation | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const g = this.gen;
      if (g !== undefined && !g.dead && !g.retiring) {
        g.active++;
        return g;
      }
      if (this.unavailable !== undefined) return undefined;
      this.launching ??= this.launch().finally(() => { this.launching = undefined; });
      const launched = await this.launching;
      if (launched === undefined) return undefined;
    }
    return undefined;
  }

  private async launch(): Promise<Generation | undefined> {
    if (!existsSync(this.cfg.chromiumPath)) {
      this.disable(`${this.cfg.chromiumPath} is not installed (Debian: apt-get install chromium)`);
      return undefined;
    }
    // A switch Chromium ignores, to find our browser among the machine's processes (/proc).
    const marker = `--ubicrawl-render=${process.pid}-${randomBytes(6).toString('hex')}`;
    try {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({
        executablePath: this.cfg.chromiumPath, headless: true, args: [...CHROMIUM_ARGS, marker], timeout: 60_000,
      });
      if (this.closed) {
        await browser.close().catch(() => {});
        return undefined;
      }
      const g: Generation = { browser, pid: findProcessByArg(marker), active: 0, retiring: false, dead: false };
      browser.on('disconnected', () => {
        g.dead = true;
        if (!g.retiring && !this.closed) {
          this.counters.crashes++;
          this.components.logger?.warn({ pid: g.pid }, 'render: browser disconnected; the next render starts a new one');
        }
        if (this.gen === g) this.gen = undefined;
      });
      this.counters.launches++;
      this.launchFailures = 0;
      this.gen = g;
      this.lastRssCheck = 0;
      return g;
    } catch (err) {
      this.launchFailures++;
      const msg = (err as Error).message.split('\n')[0]!;
      this.lastLaunchError = `chromium failed to start: ${msg}`;
      if (this.launchFailures >= MAX_LAUNCH_FAILURES) this.disable(`chromium failed to start ${this.launchFailures} times: ${msg}`);
      else this.components.logger?.warn({ err: msg }, 'render: chromium failed to start');
      return undefined;
    }
  }

  private disable(reason: string): void {
    if (this.unavailable !== undefined) return;
    this.unavailable = reason;
    this.components.logger?.warn({ reason }, 'render: rendering is off');
  }

  /** Memory cap: a browser over it takes no new page and closes once its pages are done. */
  private afterRender(g: Generation): void {
    const now = Date.now();
    if (!g.dead && !g.retiring && g.pid !== undefined && now - this.lastRssCheck >= RSS_CHECK_EVERY_MS) {
      this.lastRssCheck = now;
      const rss = processTreeRss(g.pid);
      this.counters.browserRssBytes = rss;
      if (rss > this.cfg.maxBrowserRssBytes) {
        g.retiring = true;
        this.counters.memoryRestarts++;
        this.components.logger?.info({ rss, cap: this.cfg.maxBrowserRssBytes }, 'render: browser over its memory cap, restarting it');
        if (this.gen === g) this.gen = undefined;
      }
    }
    if (g.retiring && g.active === 0 && !g.dead) void g.browser.close().catch(() => {});
  }

  // --- one render ------------------------------------------------------------------------------

  private empty(job: RenderJob, outcome: RenderOutcome, started: number, error?: string): RenderResult {
    const r: RenderResult = { url: job.url, outcome, dom: '', links: [], subresources: [], refused: 0, ms: Date.now() - started };
    if (error !== undefined) r.error = error;
    return r;
  }

  private async renderOn(g: Generation, job: RenderJob, started: number): Promise<RenderResult> {
    const timeoutMs = job.limits?.timeoutMs ?? this.cfg.timeoutMs;
    const maxRequests = job.limits?.maxRequests ?? this.cfg.maxRequests;
    const maxBytes = job.limits?.maxBytes ?? this.cfg.maxBytes;
    const deadline = started + timeoutMs;
    const remaining = () => Math.max(1, deadline - Date.now());
    const result = this.empty(job, 'rendered', started);
    const fetched = new Map<string, Subresource>();
    let requests = 0;
    let bytes = 0;
    let overBudget = false;
    let finished = false;
    let pageCrashed = false;
    let mainServed = false;
    // Requests the page has open (by object: a request may end without a matching event of each
    // kind), and route handlers still working (waiting for the host's clock included).
    const open = new Set<unknown>();
    let handling = 0;
    let lastNetwork = Date.now();
    let context: BrowserContext | undefined;

    const serveMain = async (route: Route) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(job.headers)) if (!TRANSFER_HEADERS.has(k.toLowerCase())) headers[k] = v;
      await route.fulfill({ status: job.status, headers, body: Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength) });
    };

    const refuse = async (route: Route) => {
      result.refused++;
      await route.abort('blockedbyclient');
    };

    const handle = async (route: Route) => {
      const req = route.request();
      const url = req.url();
      if (!mainServed && req.isNavigationRequest() && req.frame().parentFrame() === null && sameDocument(url, job.url)) {
        mainServed = true;
        return serveMain(route);
      }
      if (finished || !(url.startsWith('http://') || url.startsWith('https://'))) return refuse(route);
      const method = req.method();
      const known = method === 'GET' ? fetched.get(url) : undefined;
      if (known !== undefined) return route.fulfill({ status: known.status, headers: fulfilHeaders(known.headers), body: known.body });
      if (requests >= maxRequests || bytes >= maxBytes) {
        overBudget = true;
        return refuse(route);
      }
      if (!(await this.components.allowed(url))) return refuse(route);
      requests++;
      let sub: Subresource;
      if (this.components.fetch !== undefined) {
        // No redirect is followed there either: a 3xx goes back to the browser.
        const got = await this.components.fetch(url, method, deadline);
        if (got === undefined || finished) return refuse(route);
        sub = got;
      } else {
        const host = new URL(url).host;
        await this.components.acquire?.(host);
        try {
          if (finished) return refuse(route);
          // No redirect is followed here: a 3xx goes back to the browser, whose next request comes
          // through this handler again (robots.txt and politeness apply to the target too).
          const resp = await route.fetch({ maxRedirects: 0, timeout: remaining() });
          const body = await resp.body();
          const headers = resp.headersArray();
          sub = { url, method, status: resp.status(), headers, contentType: headerOf(headers, 'content-type') ?? '', body };
        } finally {
          this.components.release?.(host);
        }
      }
      bytes += sub.body.length;
      if (bytes > maxBytes) overBudget = true;
      if (!fetched.has(url)) {
        fetched.set(url, sub);
        result.subresources.push(sub);
      }
      await route.fulfill({ status: sub.status, headers: fulfilHeaders(sub.headers), body: sub.body });
    };

    try {
      context = await g.browser.newContext({ userAgent: this.cfg.userAgent, serviceWorkers: 'block', acceptDownloads: false });
      const page: Page = await context.newPage();
      page.on('crash', () => { pageCrashed = true; });
      page.on('request', (r) => { open.add(r); lastNetwork = Date.now(); });
      const done = (r: unknown) => { open.delete(r); lastNetwork = Date.now(); };
      page.on('requestfinished', done);
      page.on('requestfailed', done);
      await page.route('**/*', async (route) => {
        handling++;
        lastNetwork = Date.now();
        try {
          await handle(route);
        } catch {
          await route.abort('failed').catch(() => {});
        } finally {
          handling--;
          lastNetwork = Date.now();
        }
      });

      let timedOut = false;
      try {
        await page.goto(job.url, { waitUntil: 'load', timeout: remaining() });
      } catch (err) {
        if (g.dead || pageCrashed) throw err;
        if (Date.now() >= deadline) timedOut = true;
        else throw err;
      }
      // Network idle: no request in flight for networkIdleMs (bounded by the deadline).
      while (!timedOut && !g.dead && !pageCrashed) {
        const now = Date.now();
        if (now >= deadline) { timedOut = true; break; }
        if (open.size === 0 && handling === 0 && now - lastNetwork >= this.cfg.networkIdleMs) break;
        await sleep(Math.min(50, deadline - now));
      }
      finished = true;
      if (g.dead || pageCrashed) throw new Error('browser crashed');
      // A page stuck in a script loop answers nothing: the DOM is taken with a short bound of its own.
      const grace = Math.max(3_000, Math.min(5_000, timeoutMs / 4));
      result.dom = await withTimeout(page.content(), grace);
      const hrefs = await withTimeout(page.evaluate(LINKS_SCRIPT) as Promise<unknown>, grace);
      result.links = cleanLinks(hrefs);
      result.outcome = timedOut ? 'timeout' : overBudget ? 'budget' : 'rendered';
    } catch (err) {
      finished = true;
      if (g.dead || pageCrashed || !g.browser.isConnected()) {
        result.outcome = 'crashed';
        if (pageCrashed && !g.dead) g.retiring = true; // a renderer crash: start afresh for the next page
      } else result.outcome = Date.now() >= deadline ? 'timeout' : overBudget ? 'budget' : 'crashed';
      result.error = (err as Error).message.split('\n')[0];
    } finally {
      finished = true;
      if (context !== undefined && !g.dead) await withTimeout(context.close(), 5_000).catch(() => {});
    }
    result.ms = Date.now() - started;
    return result;
  }
}

// Runs in the page: hrefs as the DOM resolves them (against <base> and the document URL).
const LINKS_SCRIPT = `Array.from(document.querySelectorAll('a[href], area[href]'), (e) => e.href)`;

function cleanLinks(hrefs: unknown): string[] {
  if (!Array.isArray(hrefs)) return [];
  const out: string[] = [];
  const seen = new Set<string>();
  for (const h of hrefs) {
    if (typeof h !== 'string' || !(h.startsWith('http://') || h.startsWith('https://'))) continue;
    const i = h.indexOf('#');
    const u = i < 0 ? h : h.slice(0, i);
    if (!seen.has(u)) {
      seen.add(u);
      out.push(u);
    }
  }
  return out;
}

function sameDocument(a: string, b: string): boolean {
  const strip = (u: string) => { const i = u.indexOf('#'); return i < 0 ? u : u.slice(0, i); };
  try {
    return new URL(strip(a)).href === new URL(strip(b)).href;
  } catch {
    return false;
  }
}

function headerOf(headers: Array<{ name: string; value: string }>, name: string): string | undefined {
  for (const h of headers) if (h.name.toLowerCase() === name) return h.value;
  return undefined;
}

/** Headers for route.fulfill: the body is decoded and complete; repeated names joined (Set-Cookie by newline, as playwright expects). */
function fulfilHeaders(headers: Array<{ name: string; value: string }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, value } of headers) {
    const k = name.toLowerCase();
    if (TRANSFER_HEADERS.has(k)) continue;
    out[k] = out[k] === undefined ? value : `${out[k]}${k === 'set-cookie' ? '\n' : ', '}${value}`;
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// --- /proc ---------------------------------------------------------------------------------------

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function pids(): number[] {
  try {
    return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
  } catch {
    return [];
  }
}

/** Parent pid from /proc/<pid>/stat (the field after the parenthesised command name). */
function parentOf(pid: number): number | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ppid = Number(rest[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** The topmost process whose command line carries `arg` (Chromium's helpers copy some switches). */
export function findProcessByArg(arg: string): number | undefined {
  const having = new Set<number>();
  for (const pid of pids()) {
    const cmd = readProc(`/proc/${pid}/cmdline`);
    if (cmd !== undefined && cmd.split('\0').includes(arg)) having.add(pid);
  }
  for (const pid of having) {
    const ppid = parentOf(pid);
    if (ppid === undefined || !having.has(ppid)) return pid;
  }
  return undefined;
}

/**
 * Memory of a process and its descendants, bytes (0 when it is gone): the sum of their PSS
 * (/proc/<pid>/smaps_rollup), where a page shared by k processes counts 1/k in each, so the
 * sum is what the tree holds; VmRSS where smaps_rollup is missing (Linux < 4.14), which counts a
 * shared page once per process (Chromium's helpers share most of their code: about 2× too much).
 */
export function processTreeRss(root: number): number {
  const children = new Map<number, number[]>();
  for (const pid of pids()) {
    const ppid = parentOf(pid);
    if (ppid === undefined) continue;
    let list = children.get(ppid);
    if (list === undefined) children.set(ppid, (list = []));
    list.push(pid);
  }
  let total = 0;
  const stack = [root];
  for (let n = 0; stack.length > 0 && n < 10_000; n++) {
    const pid = stack.pop()!;
    const rollup = readProc(`/proc/${pid}/smaps_rollup`);
    const pss = rollup === undefined ? null : /^Pss:\s+(\d+) kB/m.exec(rollup);
    const status = pss !== null ? undefined : readProc(`/proc/${pid}/status`);
    const m = pss ?? (status === undefined ? null : /^VmRSS:\s+(\d+) kB/m.exec(status));
    if (m !== null) total += Number(m[1]) * 1024;
    for (const c of children.get(pid) ?? []) stack.push(c);
  }
  return total;
}
