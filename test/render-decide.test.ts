// The render decision (src/render/decide.ts) from the static parse's signals
// (src/parse/html.ts renderSignals), on HTML as the common frameworks ship it,
// and the durable render queue (src/render/queue.ts) over a real store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractPage, type RenderSignals } from '../src/parse/html.js';
import { decideRender, hostMatches, HostRenderMemory, pageNeedsRender } from '../src/render/decide.js';
import { RenderQueue } from '../src/render/queue.js';
import { openStore } from '../src/store/db.js';
import { tempDir } from './helpers.js';
import { HostClocks } from '../src/crawl/render-clocks.js';
import { PolitenessControl } from '../src/politeness/control.js';
import { politenessConfig } from '../src/politeness/host.js';
import { SideClocks } from '../src/politeness/side-clocks.js';

function signals(html: string): RenderSignals {
  const ex = extractPage(Buffer.from(html), { url: 'https://example.test/', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', wantRenderSignals: true });
  assert.ok(ex.renderSignals, 'signals collected');
  return ex.renderSignals;
}

// create-react-app's public/index.html after a build.
const CRA = `<!doctype html><html lang="en"><head><meta charset="utf-8"/><link rel="icon" href="/favicon.ico"/>
<meta name="viewport" content="width=device-width,initial-scale=1"/><title>React App</title>
<script defer="defer" src="/static/js/main.3b2c1a.js"></script><link href="/static/css/main.073c9b0a.css" rel="stylesheet"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body></html>`;

// Next.js (pages router) before hydration: the root holds a spinner, the data is in a JSON script.
const NEXT = `<!DOCTYPE html><html><head><title>Shop</title><script src="/_next/static/chunks/webpack-1.js" defer=""></script>
<script src="/_next/static/chunks/main-2.js" defer=""></script></head><body><div id="__next"><div class="spinner"><span>Loading…</span></div></div>
<script id="__NEXT_DATA__" type="application/json">{"props":{"pageProps":{}},"page":"/"}</script></body></html>`;

// A Vue app mounted on #app with a noscript in French-free English, and some footer text outside the root.
const VUE = `<html><head><script type="module" src="/assets/index-4f2.js"></script></head>
<body><div id="app"></div><footer>© 2026 Example</footer></body></html>`;

const ARTICLE_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
// A static article with analytics scripts and a theme's <div id="app"> wrapping real content.
const STATIC_WITH_SCRIPTS = `<html><head><title>Article</title><script async src="https://www.googletagmanager.com/gtag/js?id=G-1"></script>
<script>window.dataLayer=window.dataLayer||[];</script></head><body><div id="app"><article><h1>Foxes</h1><p>${ARTICLE_TEXT}</p>
<a href="/next">Next</a></article></div><noscript><img src="/pixel.gif"></noscript></body></html>`;

const PLAIN = `<html><head><title>Index of /</title></head><body><h1>Index of /</h1><ul><li><a href="a.txt">a.txt</a></li></ul></body></html>`;

test('render signals: what the static parse sees', () => {
  const cra = signals(CRA);
  assert.equal(cra.appRoot, 'root');
  assert.equal(cra.appRootTextChars, 0);
  assert.equal(cra.scripts, 1);
  assert.equal(cra.noscriptText, 'You need to enable JavaScript to run this app.');
  assert.equal(cra.textChars, 0, 'title and noscript are not visible text');

  const next = signals(NEXT);
  assert.equal(next.appRoot, '__next');
  assert.equal(next.appRootTextChars, 'Loading…'.length, 'text in nested elements of the root counts, script data does not');
  assert.equal(next.scripts, 3);

  const vue = signals(VUE);
  assert.equal(vue.appRoot, 'app');
  assert.equal(vue.appRootTextChars, 0, 'text after the root closed is outside it');
  assert.equal(vue.textChars, '© 2026 Example'.length);

  const article = signals(STATIC_WITH_SCRIPTS);
  assert.equal(article.appRoot, 'app');
  assert.ok(article.appRootTextChars > 800);
  assert.equal(article.noscriptText, '', 'a tracking pixel is no text');
  assert.equal(article.scripts, 2);

  // Off by default: the ordinary parse is unchanged.
  const ex = extractPage(Buffer.from(CRA), { url: 'https://example.test/', contentType: 'text/html', robotsToken: 'ubicrawl' });
  assert.equal(ex.renderSignals, undefined);
});

test('pageNeedsRender: shells render, pages with their text do not', () => {
  assert.deepEqual(pageNeedsRender(signals(CRA)), { render: true, reason: 'app-root' });
  assert.deepEqual(pageNeedsRender(signals(NEXT)), { render: true, reason: 'app-root' });
  assert.deepEqual(pageNeedsRender(signals(VUE)), { render: true, reason: 'app-root' });
  assert.deepEqual(pageNeedsRender(signals(STATIC_WITH_SCRIPTS)), { render: false, reason: 'static' });
  assert.deepEqual(pageNeedsRender(signals(PLAIN)), { render: false, reason: 'static', }, 'little text but no script: nothing a browser would add');
  // No app root, a noscript asking for JavaScript.
  const gate = `<html><head><script src="/app.js"></script></head><body><noscript>This site requires JavaScript. Please turn it on.</noscript><p>${'Menu '.repeat(60)}</p></body></html>`;
  assert.deepEqual(pageNeedsRender(signals(gate)), { render: true, reason: 'noscript' });
  // No app root, no noscript, scripts and a near-empty body.
  const bare = `<html><head><script src="/bundle.js"></script></head><body><div class="container" id="main">Loading</div></body></html>`;
  assert.deepEqual(pageNeedsRender(signals(bare)), { render: true, reason: 'scripts-little-text' });
});

test('per-host memory: the first pages settle the verdict, then it sticks', () => {
  const memory = new HostRenderMemory({ settleAfter: 3, maxHosts: 2 });
  const auto = { mode: 'auto' as const, hosts: [] };
  const shell = signals(CRA), page = signals(STATIC_WITH_SCRIPTS);
  assert.equal(decideRender('spa.test', shell, auto, memory).reason, 'app-root');
  assert.equal(decideRender('spa.test', page, auto, memory).render, false, 'decided per page until settled');
  assert.equal(decideRender('spa.test', shell, auto, memory).render, true);
  // 2 of 3 said render: settled.
  assert.equal(memory.settled('spa.test'), true);
  assert.deepEqual(decideRender('spa.test', page, auto, memory), { render: true, reason: 'host-memory' });
  // A static host settles on no.
  for (let i = 0; i < 3; i++) decideRender('docs.test', page, auto, memory);
  assert.deepEqual(decideRender('docs.test', shell, auto, memory), { render: false, reason: 'host-memory' });
  // Bounded: a third host pushes out the least recently used one (spa.test was used before docs.test).
  decideRender('third.test', page, auto, memory);
  assert.equal(memory.size, 2);
  assert.equal(memory.settled('spa.test'), undefined);
  assert.equal(memory.settled('docs.test'), false);
  // Modes and host rules.
  assert.deepEqual(decideRender('x.test', shell, { mode: 'never', hosts: [] }, memory), { render: false, reason: 'mode-never' });
  assert.deepEqual(decideRender('x.test', signals(PLAIN), { mode: 'always', hosts: [] }, memory), { render: true, reason: 'mode-always' });
  assert.deepEqual(decideRender('app.shop.test', signals(PLAIN), { mode: 'never', hosts: ['*.shop.test'] }, memory), { render: true, reason: 'host-rule' });
  assert.ok(hostMatches('Shop.test', ['shop.test']));
  assert.ok(!hostMatches('evilshop.test', ['*.shop.test']));
});

test('render queue: FIFO, bounded, at least once across a restart', async () => {
  const dir = tempDir();
  let store = await openStore(dir);
  let q = await RenderQueue.open({ db: store.render, maxQueued: 3 });
  const item = (n: number) => ({ url: `https://spa.test/p${n}`, meta: { depth: n }, enqueuedAt: 1000 + n });
  assert.equal(await q.push(item(1)), true);
  assert.equal(await q.push({ ...item(2), body: Buffer.from('<div id=root></div>') }), true);
  assert.equal(await q.push(item(3)), true);
  assert.equal(await q.push(item(4)), false, 'full');
  assert.equal(q.dropped, 1);
  const a = await q.take();
  assert.equal(a?.item.url, 'https://spa.test/p1');
  assert.deepEqual(a?.item.meta, { depth: 1 });
  const b = await q.take();
  assert.equal(b?.item.url, 'https://spa.test/p2');
  assert.equal(Buffer.from(b!.item.body!).toString(), '<div id=root></div>');
  await q.ack(a!.seq);
  assert.equal(q.size, 2);
  assert.equal(q.pending, 1);
  await store.close();

  // Restart: p2 was taken but not acknowledged, so it comes again, before p3; new pages go after.
  store = await openStore(dir);
  q = await RenderQueue.open({ db: store.render, maxQueued: 3 });
  assert.equal(q.size, 2);
  assert.equal(await q.push(item(5)), true);
  const order: string[] = [];
  for (let i = 0; i < 5; i++) {
    const e = await q.take();
    if (e === undefined) break;
    order.push(e.item.url);
    await q.ack(e.seq);
  }
  assert.deepEqual(order, ['https://spa.test/p2', 'https://spa.test/p3', 'https://spa.test/p5']);
  assert.equal(q.size, 0);
  await store.close();
});

test('render queue: a render the browser lost is taken again before younger entries; entries being rendered are skipped', async () => {
  const dir = tempDir();
  const store = await openStore(dir);
  try {
    const q = await RenderQueue.open({ db: store.render, maxQueued: 10 });
    for (let n = 1; n <= 3; n++) await q.push({ url: `https://spa.test/p${n}`, meta: {}, enqueuedAt: n });
    const a = (await q.take())!;
    const b = (await q.take())!;
    q.retry(a.seq); // p1's browser died; p2 is still rendering
    const again = (await q.take())!;
    assert.equal(again.item.url, 'https://spa.test/p1', 'the lost render comes first');
    const next = (await q.take())!;
    assert.equal(next.item.url, 'https://spa.test/p3', 'p2, being rendered, is not handed out twice');
    assert.equal(await q.take(), undefined);
    for (const e of [again, b, next]) await q.ack(e.seq);
    assert.equal(q.size, 0);
  } finally {
    await store.close();
  }
});

test("host clocks: the browser's requests to a host wait for its clock, one at a time; a parked host or a passed deadline refuses", async () => {
  const politeness = new PolitenessControl(politenessConfig({ minDelayMs: 120, delayFactor: 0 }));
  const sideClocks = new SideClocks();
  // No host is in this frontier: every host runs on a side clock (a host of the frontier is held as a turn: test/render-crawl.test.ts).
  const clocks = new HostClocks({ frontier: { host: () => undefined, hold: () => false, release: () => {} }, sideClocks, politeness });
  const t0 = Date.now();
  const first = await clocks.acquire('cdn.test', t0 + 5_000);
  assert.ok(first, 'a free host is held at once');
  let secondAt = 0;
  const second = clocks.acquire('cdn.test', t0 + 5_000).then((h) => { secondAt = Date.now(); return h; });
  const other = await clocks.acquire('api.test', t0 + 5_000);
  assert.ok(other && secondAt === 0, 'another host is not held up; the same host waits while held');
  other.done({ ok: true, status: 200, durationMs: 1 });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(secondAt, 0, 'still held');
  const released = Date.now();
  first.done({ ok: true, status: 200, durationMs: 1 });
  const h2 = await second;
  assert.ok(h2);
  assert.ok(secondAt - released >= 110, `the next request waits for the host's delay (${secondAt - released} ms)`);
  // The clock is not free again before the deadline: refused, nothing held.
  h2.done({ ok: true, status: 200, durationMs: 1 });
  assert.equal(await clocks.acquire('cdn.test', Date.now() + 20), undefined);
  sideClocks.get('gone.test', Date.now()).state.parked = true;
  assert.equal(await clocks.acquire('gone.test', Date.now() + 1_000), undefined, 'a parked host is not contacted');
  assert.deepEqual({ parked: clocks.counts.parked, timedOut: clocks.counts.timedOut }, { parked: 1, timedOut: 1 });
});
