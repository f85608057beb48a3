// The render tier in a crawl, end to end (docs/render.md), against a loopback site
// whose pages build their navigation with JavaScript from a JSON file:
// --render never crawls the shell only; auto reaches every page, archives each
// subresource once and the rendered DOM as a conversion record referring to its
// page; the browser's requests obey robots.txt and the host's politeness delay
// (the server's own log); a browser killed mid-render is replaced and the page
// rendered again. Skips, saying why, where /usr/bin/chromium is absent (the
// test without a browser runs everywhere).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startAgent, type AgentHandle } from '../src/crawl/agent.js';
import { parseResolveRule, type AgentOptions } from '../src/config.js';
import { readWarc, type WarcEntry } from '../src/warc/reader.js';
import type { RenderStep } from '../src/crawl/render-step.js';
import type { AgentMetrics } from '../src/api/metrics.js';
import { AgentBackend, type AgentView } from '../src/crawl/backend.js';
import { spawnAgent, tempDir, waitUntil } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (Debian: apt-get install -y chromium); render crawl tests skipped`;

const HOST = 'app.test';
const PAGES = ['/', '/page/1', '/page/2', '/page/3', '/page/4'];
// Every page is an empty shell: two scripts, one of them disallowed by robots.txt, and an app root.
const SHELL = (slow: boolean) => `<!doctype html><html><head><title>App</title>
<script src="/app.js${slow ? '?slow=1' : ''}"></script><script src="/private/tracker.js"></script></head>
<body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>`;
// Builds the navigation from /nav.json; also asks for a disallowed JSON file.
const APP_JS = `
fetch('/private/extra.json').catch(() => {});
fetch('/nav.json').then((r) => r.json()).then((nav) => {
  const root = document.getElementById('root');
  for (const href of nav) { const a = document.createElement('a'); a.href = href; a.textContent = 'Go to ' + href; root.appendChild(a); }
  const p = document.createElement('p'); p.textContent = 'Rendered navigation of ' + location.pathname + ' with ' + nav.length + ' links.'; root.appendChild(p);
});`;
const NAV = JSON.stringify(PAGES.slice(1));

interface Hit { path: string; at: number }

interface Site { server: Server; port: number; hits: Hit[]; slowHeld: () => boolean; close(): Promise<void> }

/** The site; `slowMs`: /app.js?slow=1 (on the first page) answers this late, so a test can act mid-render. */
async function startSite(slowMs = 0): Promise<Site> {
  const hits: Hit[] = [];
  let held = 0;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.push({ path, at: Date.now() });
    const send = (type: string, body: string) => { res.writeHead(200, { 'content-type': type }); res.end(body); };
    if (path === '/robots.txt') send('text/plain', 'User-agent: *\nDisallow: /private/\n');
    else if (PAGES.includes(path)) send('text/html; charset=utf-8', SHELL(slowMs > 0 && path === '/'));
    else if (path === '/app.js' || path === '/app.js?slow=1') {
      if (path.endsWith('slow=1')) { held++; setTimeout(() => { held--; send('text/javascript', APP_JS); }, slowMs).unref(); } else send('text/javascript', APP_JS);
    } else if (path === '/nav.json') send('application/json', NAV);
    else if (path.startsWith('/private/')) send('text/javascript', '/* must never be fetched */');
    else { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server, port, hits, slowHeld: () => held > 0,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function options(site: Site, dir: string, extra: AgentOptions): AgentOptions {
  return {
    dataDir: dir, seeds: [`http://${HOST}:${site.port}/`], untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 2,
    resolve: [parseResolveRule(`${HOST}:${site.port}:127.0.0.1`)], logLevel: 'silent', sitemaps: { enabled: false },
    linkGraph: { enabled: false }, ...extra,
  };
}

async function warcRecords(dir: string): Promise<WarcEntry[]> {
  const warcDir = join(dir, 'warc');
  const out: WarcEntry[] = [];
  for (const f of readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz')).sort()) for await (const e of readWarc(join(warcDir, f))) out.push(e);
  return out;
}

const pathOf = (url: string) => { const u = new URL(url); return u.pathname + u.search; };
const count = (hits: Hit[], path: string) => hits.filter((h) => h.path === path).length;

describe('render tier in a crawl', () => {
  test('without Chromium rendering is off, said in the summary, and the crawl goes on from the static parse', async () => {
    const site = await startSite();
    const dir = tempDir();
    try {
      const agent = await startAgent(options(site, dir, { render: { mode: 'auto', chromiumPath: '/nonexistent/chromium' } }));
      const summary = await agent.done;
      assert.match(summary.render?.off ?? '', /not installed/);
      assert.deepEqual(summary.render?.renders, { rendered: 0, timeout: 0, budget: 0, crashed: 0, unavailable: 0 });
      assert.equal(count(site.hits, '/'), 1);
      assert.equal(count(site.hits, '/app.js'), 0, 'no browser, no script fetched');
    } finally {
      await site.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('from the command line: --render, --render-host and --chromium reach the agent; without Chromium it says so once', async () => {
    const site = await startSite();
    const dir = tempDir();
    try {
      const run = spawnAgent(['join', '--seed', `http://${HOST}:${site.port}/`, '--data-dir', dir, '--until-idle', '--min-delay', '0', '--delay-factor', '0',
        '--progress', 'off', '--log-level', 'warn', '--listen', '/ip4/127.0.0.1/tcp/0', '--no-sitemaps', '--resolve', `${HOST}:${site.port}:127.0.0.1`,
        '--render', 'auto', '--render-host', '*.spa.test', '--render-timeout', '30s', '--chromium', '/nonexistent/chromium']);
      const { code } = await run.closed;
      assert.equal(code, 0, run.stderr);
      const summary = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { render?: { mode: string; off?: string } };
      assert.equal(summary.render?.mode, 'auto');
      assert.match(summary.render?.off ?? '', /\/nonexistent\/chromium is not installed/);
      assert.equal(run.stderr.split('rendering is off').length - 1, 1, `said once: ${run.stderr}`);
    } finally {
      await site.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--render never crawls only the shell', { skip }, async () => {
    const site = await startSite();
    const dir = tempDir();
    try {
      const agent = await startAgent(options(site, dir, {}));
      const summary = await agent.done;
      assert.equal(summary.render, undefined, 'the tier is not configured');
      assert.deepEqual(site.hits.map((h) => h.path).sort(), ['/', '/robots.txt']);
    } finally {
      await site.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--render auto reaches every page, archives each subresource once and the rendered DOM as a conversion record of its page; robots.txt and the host delay hold for the browser', { skip }, async () => {
    const site = await startSite();
    const dir = tempDir();
    const delay = 150;
    try {
      const agent = await startAgent(options(site, dir, { minDelayMs: delay, render: { mode: 'auto' } }));
      const summary = await agent.done;
      const r = summary.render!;
      for (const p of PAGES) assert.equal(count(site.hits, p), 1, `${p} fetched once`);
      assert.equal(r.renders.rendered, PAGES.length, `every page rendered (${JSON.stringify(r)})`);
      assert.equal(r.decisions['app-root'] ?? 0, PAGES.length, 'decided from the static parse: an empty app root');
      // Each subresource requested once: the other pages were served from this run's copy.
      assert.equal(count(site.hits, '/app.js'), 1);
      assert.equal(count(site.hits, '/nav.json'), 1);
      // robots.txt: the disallowed script and JSON file never reached the server.
      assert.deepEqual(site.hits.filter((h) => h.path.startsWith('/private/')), [], 'no disallowed request left the browser');
      assert.ok(r.subresources.robotsRefused >= 2 * PAGES.length, `disallowed requests refused (${r.subresources.robotsRefused})`);
      // One clock for the host: the page fetches and the browser's requests at least `delay` apart.
      const times = site.hits.map((h) => h.at).sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) {
        assert.ok(times[i]! - times[i - 1]! >= delay - 10, `requests ${i - 1} and ${i} (${site.hits.map((h) => h.path).join(' ')}) ${times[i]! - times[i - 1]!} ms apart, not ${delay}`);
      }

      const recs = await warcRecords(dir);
      const responses = recs.filter((e) => e.type === 'response');
      const byPath = (p: string) => responses.filter((e) => pathOf(e.headers['WARC-Target-URI']!) === p);
      assert.equal(byPath('/app.js').length, 1, 'the script archived once');
      assert.equal(byPath('/nav.json').length, 1, 'the JSON file archived once');
      assert.equal(byPath('/app.js')[0]!.httpStatusLine?.includes('200'), true);
      const conversions = recs.filter((e) => e.type === 'conversion');
      assert.equal(conversions.length, PAGES.length, 'one rendered DOM per page');
      for (const p of PAGES) {
        // The shells are byte-identical: after the first, each page is archived as a revisit record.
        const page = recs.filter((e) => (e.type === 'response' || e.type === 'revisit') && pathOf(e.headers['WARC-Target-URI']!) === p);
        assert.equal(page.length, 1, `${p}: one response or revisit record`);
        const conv = conversions.find((e) => pathOf(e.headers['WARC-Target-URI']!) === p);
        assert.ok(conv, `${p}: a conversion record`);
        assert.equal(conv.headers['WARC-Refers-To'], page[0]!.headers['WARC-Record-ID'], `${p}: WARC-Refers-To names the page's response`);
        assert.match(conv.headers['Content-Type'] ?? '', /^text\/html/);
        const dom = Buffer.from(conv.payload!).toString('utf8');
        assert.match(dom, /Rendered navigation of/, `${p}: the DOM the script built`);
        assert.match(dom, /href="\/page\/4"/);
      }
      assert.ok(r.linksAdmitted >= PAGES.length - 1, 'the rendered links went through admission');
      // The shells have no visible word (no fingerprint); the rendered pages' text is fingerprinted.
      assert.equal(summary.dedup.fingerprinted, PAGES.length, 'the rendered text feeds the near-duplicate index');

      // Operations: /metrics and GET /status (the dashboard's source) count the same renders.
      const metrics = await (agent as unknown as { metrics: AgentMetrics }).metrics.render();
      assert.match(metrics, new RegExp(`^ubicrawl_renders_total\\{outcome="rendered"\\} ${PAGES.length}$`, 'm'));
      assert.match(metrics, new RegExp(`^ubicrawl_render_duration_seconds_count ${PAGES.length}$`, 'm'));
      assert.match(metrics, /^ubicrawl_render_queue_depth 0$/m);
      assert.match(metrics, /^ubicrawl_render_browser_memory_bytes [1-9]\d*$/m);
      const status = new AgentBackend(agent as unknown as AgentView).status().render!;
      assert.equal(status.renders.rendered, PAGES.length);
      assert.equal(status.queue, 0);
      assert.ok(status.meanRenderMs > 0 && status.browserRssBytes > 0, JSON.stringify(status));
    } finally {
      await site.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a browser killed mid-render is started again and the page rendered again: nothing is lost', { skip }, async () => {
    const site = await startSite(1500);
    const dir = tempDir();
    let agent: AgentHandle | undefined;
    try {
      agent = await startAgent(options(site, dir, { render: { mode: 'always' } }));
      const step = (agent as unknown as { render: RenderStep }).render;
      // The first render waits on the slow script: the browser is up and the page is mid-render.
      assert.ok(await waitUntil(() => site.slowHeld() && step.browserPid() !== undefined, 30_000, 20), 'the first render started');
      const pid = step.browserPid()!;
      process.kill(pid, 'SIGKILL');
      const summary = await agent.done;
      const r = summary.render!;
      assert.ok(r.browser.crashes >= 1 && r.browser.launches >= 2, `the browser was replaced (${JSON.stringify(r.browser)})`);
      assert.ok(r.retried >= 1, 'the interrupted page was rendered again');
      for (const p of PAGES) assert.equal(count(site.hits, p), 1, `${p} reached and fetched once`);
      assert.equal(r.waiting, 0, 'nothing left in the render queue');
      const conversions = (await warcRecords(dir)).filter((e) => e.type === 'conversion');
      assert.deepEqual(conversions.map((e) => pathOf(e.headers['WARC-Target-URI']!)).sort(), [...PAGES].sort(), 'every page, the killed one included, has its rendered DOM');
    } finally {
      if (agent) await agent.stop();
      await site.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
