// The render pool (src/render/browser.ts) against a loopback site whose
// navigation is built by JavaScript from a JSON file: links come back from the
// rendered DOM, subresources are fetched through the injected robots/scope
// check and politeness clock (checked from the server's own request log), and
// a browser killed mid-render is replaced. Skips, saying why, only when
// /usr/bin/chromium is absent.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RenderPool, type RenderComponents, type RenderJob } from '../src/render/browser.js';
import { waitUntil } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (Debian: apt-get install -y chromium); render tests skipped`;

const SHELL = `<!doctype html><html><head><title>Shop</title>
<script src="/lib.js"></script><script src="/app.js"></script></head>
<body><a href="/static">static</a><div id="root"></div></body></html>`;
// Builds the navigation from /nav.json (asked twice: the second is served from the render's own copy).
const APP_JS = `
fetch('/nav.json').then((r) => r.json()).then((nav) => {
  const root = document.getElementById('root');
  for (const href of nav) { const a = document.createElement('a'); a.href = href; a.textContent = href; root.appendChild(a); }
  return fetch('/nav.json');
}).catch(() => {});`;
const NAV = JSON.stringify(['/category/1', '/category/2#top', 'http://other.test/c']);
const SLOW_SHELL = `<!doctype html><html><head><script src="/slow.js"></script></head><body><div id="app"></div></body></html>`;

interface Hit { path: string; at: number }

/** A per-host clock: one request at a time per host, the next one `delayMs` after the previous one ended. */
class DelayClock {
  private readonly tail = new Map<string, Promise<void>>();
  private readonly holders = new Map<string, Array<() => void>>();
  constructor(private readonly delayMs: number) {}
  async acquire(host: string): Promise<void> {
    const prev = this.tail.get(host) ?? Promise.resolve();
    let done!: () => void;
    this.tail.set(host, new Promise<void>((resolve) => { done = resolve; }));
    await prev;
    let list = this.holders.get(host);
    if (list === undefined) this.holders.set(host, (list = []));
    list.push(done);
  }
  release(host: string): void {
    const done = this.holders.get(host)?.shift();
    if (done !== undefined) setTimeout(done, this.delayMs);
  }
}

describe('render pool in headless chromium', { skip }, () => {
  let server: Server;
  let origin = '';
  const hits: Hit[] = [];
  let disallow = new Set<string>();
  let clock = new DelayClock(0);
  let pool: RenderPool;

  const components: RenderComponents = {
    allowed: (url) => !disallow.has(new URL(url).pathname),
    acquire: (host) => clock.acquire(host),
    release: (host) => clock.release(host),
  };
  const job = (path: string, body: string): RenderJob => ({
    url: `${origin}${path}`, status: 200, headers: { 'content-type': 'text/html; charset=utf-8', 'content-length': '1' }, body: Buffer.from(body),
  });
  const count = (path: string) => hits.filter((h) => h.path === path).length;

  before(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      hits.push({ path, at: Date.now() });
      const send = (type: string, body: string) => { res.writeHead(200, { 'content-type': type }); res.end(body); };
      if (path === '/lib.js') send('text/javascript', 'window.lib = 1;');
      else if (path === '/app.js') send('text/javascript', APP_JS);
      else if (path === '/nav.json') send('application/json', NAV);
      else if (path === '/slow.js') setTimeout(() => send('text/javascript', ''), 10_000).unref();
      else { res.writeHead(404); res.end(); }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    pool = new RenderPool(components, { userAgent: 'ubicrawl-test/0', concurrency: 2, timeoutMs: 30_000, networkIdleMs: 300 });
  });

  after(async () => {
    await pool?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });

  test('links built by JavaScript come back; the page is not fetched again, each subresource once', { timeout: 120_000 }, async () => {
    hits.length = 0;
    const r = await pool.render(job('/', SHELL));
    assert.equal(r.outcome, 'rendered', r.error);
    assert.deepEqual(r.links, [`${origin}/static`, `${origin}/category/1`, `${origin}/category/2`, 'http://other.test/c']);
    assert.match(r.dom, /<div id="root"><a href="\/category\/1">/);
    assert.equal(count('/'), 0, 'the page is served from the fetcher\'s copy');
    assert.equal(count('/nav.json'), 1, 'asked twice by the page, fetched once');
    assert.deepEqual(r.subresources.map((s) => s.url).sort(), [`${origin}/app.js`, `${origin}/lib.js`, `${origin}/nav.json`]);
    const nav = r.subresources.find((s) => s.url.endsWith('/nav.json'))!;
    assert.equal(nav.status, 200);
    assert.equal(nav.contentType, 'application/json');
    assert.equal(nav.body.toString(), NAV);
    assert.ok(nav.headers.some((h) => h.name.toLowerCase() === 'date'), 'headers as received');
    assert.equal(r.refused, 0);
  });

  test('a disallowed JSON is refused inside the browser and never requested', { timeout: 120_000 }, async () => {
    hits.length = 0;
    disallow = new Set(['/nav.json']);
    try {
      const r = await pool.render(job('/', SHELL));
      assert.equal(r.outcome, 'rendered', r.error);
      assert.equal(count('/nav.json'), 0);
      assert.equal(count('/app.js'), 1);
      assert.deepEqual(r.links, [`${origin}/static`], 'only the shell\'s own link');
      assert.ok(r.refused >= 1);
      assert.ok(!r.subresources.some((s) => s.url.endsWith('/nav.json')));
    } finally {
      disallow = new Set();
    }
  });

  test('the host\'s politeness clock spaces the browser\'s requests', { timeout: 120_000 }, async () => {
    hits.length = 0;
    clock = new DelayClock(300);
    try {
      const r = await pool.render(job('/', SHELL));
      assert.equal(r.outcome, 'rendered', r.error);
      const times = hits.map((h) => h.at);
      assert.equal(times.length, 3, `lib.js, app.js, nav.json: ${hits.map((h) => h.path)}`);
      for (let i = 1; i < times.length; i++) assert.ok(times[i]! - times[i - 1]! >= 300, `request ${i} ${times[i]! - times[i - 1]!} ms after the previous`);
    } finally {
      clock = new DelayClock(0);
    }
  });

  test('budgets: past the request budget requests are refused; past the wall time the DOM is taken as it is', { timeout: 120_000 }, async () => {
    hits.length = 0;
    const r = await pool.render({ ...job('/', SHELL), limits: { maxRequests: 1 } });
    assert.equal(r.outcome, 'budget', r.error);
    assert.equal(count('/lib.js') + count('/app.js'), 1, 'one request within the budget');
    assert.equal(count('/nav.json'), 0);
    assert.deepEqual(r.links, [`${origin}/static`]);
    assert.equal(r.subresources.length, 1);

    hits.length = 0;
    const t = await pool.render({ ...job('/slow', SLOW_SHELL), limits: { timeoutMs: 2_000 } });
    assert.equal(t.outcome, 'timeout', t.error);
    assert.match(t.dom, /<script src="\/slow.js"><\/script>/, 'the DOM as it stood');
    assert.ok(t.ms < 2_000 + 2 * 3_000 + 5_000, `${t.ms} ms`);
  });

  test('a browser killed mid-render: the job is crashed, the next render gets a new browser', { timeout: 180_000 }, async () => {
    hits.length = 0;
    const launches = pool.stats().launches;
    const pid = pool.browserPid();
    assert.ok(pid !== undefined, 'the browser\'s process was found in /proc');
    const pending = pool.render(job('/slow', SLOW_SHELL));
    assert.ok(await waitUntil(() => count('/slow.js') === 1, 60_000), 'the page asked for its script');
    process.kill(pid, 'SIGKILL');
    const r = await pending;
    assert.equal(r.outcome, 'crashed');
    const again = await pool.render(job('/', SHELL));
    assert.equal(again.outcome, 'rendered', again.error);
    assert.equal(again.links.length, 4);
    const s = pool.stats();
    assert.equal(s.launches, launches + 1);
    assert.equal(s.crashes, 1);
    assert.notEqual(pool.browserPid(), pid);
    assert.ok(s.outcomes.crashed === 1 && s.outcomes.rendered >= 4 && s.outcomes.budget === 1 && s.outcomes.timeout === 1, JSON.stringify(s.outcomes));
  });
});

test('a browser over its memory cap is replaced between renders', { skip, timeout: 180_000 }, async () => {
  const infos: string[] = [];
  const pool = new RenderPool(
    { allowed: () => true, acquire: async () => {}, release: () => {}, logger: { info: (_o, m) => infos.push(m), warn: () => {} } },
    { userAgent: 'ubicrawl-test/0', maxBrowserRssBytes: 1, networkIdleMs: 100 },
  );
  try {
    const page = { url: 'http://127.0.0.1:9/', status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<a href="/x">x</a>') };
    const first = await pool.render(page);
    assert.equal(first.outcome, 'rendered', first.error);
    assert.ok(pool.stats().browserRssBytes > 0, 'memory read from /proc');
    const second = await pool.render(page);
    assert.equal(second.outcome, 'rendered', second.error);
    assert.deepEqual(second.links, ['http://127.0.0.1:9/x']);
    const s = pool.stats();
    assert.equal(s.launches, 2);
    assert.ok(s.memoryRestarts >= 1);
    assert.equal(s.crashes, 0, 'a retired browser is no crash');
    assert.ok(infos.includes('render: browser over its memory cap, restarting it'));
  } finally {
    await pool.close();
  }
});

test('without chromium, rendering is off and says so once', async () => {
  const warnings: string[] = [];
  const pool = new RenderPool(
    { allowed: () => true, acquire: async () => {}, release: () => {}, logger: { info: () => {}, warn: (_o, m) => warnings.push(m) } },
    { userAgent: 'ubicrawl-test/0', chromiumPath: '/nonexistent/chromium' },
  );
  const job = { url: 'http://127.0.0.1:9/', status: 200, headers: {}, body: Buffer.from('<html></html>') };
  const a = await pool.render(job);
  const b = await pool.render(job);
  assert.equal(a.outcome, 'unavailable');
  assert.equal(b.outcome, 'unavailable');
  assert.match(a.error ?? '', /not installed/);
  assert.deepEqual(warnings, ['render: rendering is off']);
  assert.equal(pool.stats().available, false);
  await pool.close();
});
