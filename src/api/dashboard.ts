// The live dashboard served at `GET /` (docs/operations.md "Dashboard"): one self-contained page,
// no build step, no CDN, kept as a string module so `tsc` output is all the
// server needs. It polls `/status` every second and draws the throughput chart
// as inline SVG. Everything that comes from the crawl (URLs, host names, error
// messages) is inserted with textContent, never as markup: crawled data is
// attacker-controlled. The server sends a Content-Security-Policy that allows
// exactly this page's inline style and script (by hash) and same-origin fetches.
import { createHash } from 'node:crypto';

const STYLE = `
:root { color-scheme: light dark; --bg: #f7f7f8; --fg: #1b1c1f; --muted: #5b5f69; --card: #fff; --line: #d9dbe0;
  --accent: #1f5fbf; --ok: #1d7a3a; --warn: #9a5b00; --bad: #b3261e; --chart: #1f5fbf; --chart-fill: rgba(31,95,191,.12); }
@media (prefers-color-scheme: dark) {
  :root { --bg: #121316; --fg: #e6e7ea; --muted: #a3a7b1; --card: #1b1d21; --line: #33363d;
    --accent: #8ab4ff; --ok: #6dd58c; --warn: #f0b35a; --bad: #ff8a80; --chart: #8ab4ff; --chart-fill: rgba(138,180,255,.15); }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; flex-wrap: wrap; gap: .5rem 1.25rem; align-items: baseline; padding: 1rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--card); }
header h1 { font-size: 1.25rem; margin: 0; }
.meta { color: var(--muted); font-size: .9rem; font-weight: normal; }
main { padding: 1rem 1.5rem 2rem; display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 30rem), 1fr)); }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem 1rem; min-width: 0; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 1rem; margin: .25rem 0 .75rem; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: .75rem; margin: 0; }
.tiles div { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
.tiles dt { color: var(--muted); font-size: .8rem; }
.tiles dd { margin: 0; font-size: 1.4rem; font-variant-numeric: tabular-nums; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; }
td.break { word-break: break-all; }
.empty { color: var(--muted); font-style: italic; }
.state { display: inline-block; padding: 0 .4rem; border-radius: 4px; border: 1px solid currentColor; font-size: .8rem; }
.state-active { color: var(--ok); } .state-joining, .state-leaving, .state-suspect, .state-starting { color: var(--warn); } .state-dead, .state-stopped { color: var(--bad); }
.bar { display: inline-block; height: .55rem; background: var(--accent); border-radius: 2px; vertical-align: middle; margin-right: .4rem; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: .85rem; margin-top: .25rem; }
svg { width: 100%; height: auto; display: block; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .axis { fill: var(--muted); font-size: 11px; }
svg .line { fill: none; stroke: var(--chart); stroke-width: 2; }
svg .area { fill: var(--chart-fill); stroke: none; }
form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: flex-end; }
form > div { flex: 0 1 36rem; min-width: 0; }
label { display: block; font-size: .85rem; color: var(--muted); }
input { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); width: 100%; }
button { font: inherit; padding: .4rem .9rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: var(--card); cursor: pointer; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .75rem 0; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; word-break: break-all; }
details { margin-top: .75rem; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .5rem; overflow: auto; max-height: 24rem; font-size: .8rem; }
.error { color: var(--bad); }
#conn.bad { color: var(--bad); font-weight: 600; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

const SCRIPT = `
'use strict';
const $ = (id) => document.getElementById(id);
const HISTORY_WINDOW_MS = 5 * 60 * 1000;
let token = sessionStorage.getItem('ubicrawl-token') || '';
let polling = false;
let connected = null;
// Screen readers hear only changes of the connection, not the every-second refresh.
function announce(ok, text) { if (connected !== ok) { connected = ok; $('announce').textContent = text; } }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) for (const k of Object.keys(attrs)) { if (k === 'class') e.className = attrs[k]; else e.setAttribute(k, attrs[k]); }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}
const num = (n) => (typeof n === 'number' && isFinite(n) ? n.toLocaleString('en-US') : '–');
const rate = (n) => (typeof n === 'number' && isFinite(n) ? (n >= 100 ? n.toFixed(0) : n.toFixed(1)) : '–');
function bytes(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
}
function dur(ms) {
  if (typeof ms !== 'number' || !isFinite(ms) || ms < 0) return '–';
  const s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  if (d) return d + 'd ' + h + 'h'; if (h) return h + 'h ' + m + 'm'; if (m) return m + 'm ' + (s % 60) + 's'; return (s % 60) + 's';
}
const time = (t) => (typeof t === 'number' ? new Date(t).toLocaleTimeString() : '–');
const stamp = (t) => (typeof t === 'number' ? new Date(t).toISOString() : '–');
const ago = (t, now) => (typeof t === 'number' ? dur(now - t) + ' ago' : '–');
const state = (s) => el('span', { class: 'state state-' + String(s) }, String(s));
// Sized through the CSSOM: the CSP allows no inline style attributes.
function shareBar(share) { const b = el('span', { class: 'bar', 'aria-hidden': 'true' }); b.style.width = Math.round(Math.max(0, Math.min(1, share)) * 60) + 'px'; return b; }

async function api(path, init) {
  const headers = Object.assign({ accept: 'application/json' }, init && init.headers);
  if (token) headers.authorization = 'Bearer ' + token;
  const res = await fetch(path, Object.assign({ cache: 'no-store' }, init, { headers }));
  if (res.status === 401) { $('auth').hidden = false; throw new Error('this agent wants a bearer token'); }
  let body = null;
  try { body = await res.json(); } catch { body = null; }
  if (!res.ok) throw new Error((body && body.error) || ('HTTP ' + res.status));
  return body;
}

function fillTable(tbody, rows, cols, emptyText) {
  const tr = [];
  if (!rows.length) tr.push(el('tr', null, el('td', { colspan: String(cols), class: 'empty' }, emptyText)));
  else for (const cells of rows) tr.push(el('tr', null, ...cells));
  tbody.replaceChildren(...tr);
}
const td = (v, cls) => el('td', cls ? { class: cls } : null, v);

function rates(points) {
  const out = [];
  for (let i = 1; i < points.length; i++) {
    const dt = (points[i].t - points[i - 1].t) / 1000;
    if (dt > 0) out.push({ t: points[i].t, r: Math.max(0, points[i].fetched - points[i - 1].fetched) / dt });
  }
  return out;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v))), f = v / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

function drawChart(points, now) {
  const W = 800, H = 200, L = 48, R = 8, T = 10, B = 24;
  const svg = $('chart');
  const pts = rates(points).filter((p) => p.t >= now - HISTORY_WINDOW_MS);
  const max = niceMax(Math.max(0, ...pts.map((p) => p.r)));
  const x = (t) => L + ((t - (now - HISTORY_WINDOW_MS)) / HISTORY_WINDOW_MS) * (W - L - R);
  const y = (r) => T + (1 - r / max) * (H - T - B);
  const ns = 'http://www.w3.org/2000/svg';
  const s = (tag, a, text) => { const e = document.createElementNS(ns, tag); for (const k in a) e.setAttribute(k, a[k]); if (text != null) e.textContent = text; return e; };
  const parts = [];
  for (const g of [0, 0.5, 1]) {
    parts.push(s('line', { class: 'grid', x1: L, x2: W - R, y1: y(max * g), y2: y(max * g) }));
    const v = max * g;
    parts.push(s('text', { class: 'axis', x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, Number.isInteger(v) ? String(v) : v.toFixed(1)));
  }
  for (const m of [5, 4, 3, 2, 1, 0]) {
    parts.push(s('text', { class: 'axis', x: x(now - m * 60000), y: H - 6, 'text-anchor': m === 0 ? 'end' : 'middle' }, m ? '−' + m + ' min' : 'now'));
  }
  if (pts.length > 1) {
    const d = pts.map((p, i) => (i ? 'L' : 'M') + x(p.t).toFixed(1) + ' ' + y(p.r).toFixed(1)).join(' ');
    parts.push(s('path', { class: 'area', d: d + ' L' + x(pts[pts.length - 1].t).toFixed(1) + ' ' + y(0) + ' L' + x(pts[0].t).toFixed(1) + ' ' + y(0) + ' Z' }));
    parts.push(s('path', { class: 'line', d }));
  }
  svg.replaceChildren(...parts);
  const last = pts.length ? pts[pts.length - 1].r : 0;
  const peak = pts.reduce((a, p) => Math.max(a, p.r), 0);
  const label = 'Pages per second over the last 5 minutes: now ' + rate(last) + ', peak ' + rate(peak) + '.';
  svg.setAttribute('aria-label', label);
  $('chart-caption').textContent = label;
}

function renderTier(r) {
  $('render').hidden = !r;
  if (!r) return;
  const o = r.renders || {};
  $('render-mode').textContent = '--render ' + r.mode + (r.off ? ' · off: ' + r.off : '');
  $('render-queue').textContent = num(r.queue);
  $('render-active').textContent = num(r.active);
  $('render-done').textContent = num(o.rendered || 0);
  $('render-failed').textContent = num(o.timeout || 0) + ' / ' + num(o.budget || 0) + ' / ' + num(o.crashed || 0);
  $('render-time').textContent = r.meanRenderMs ? (r.meanRenderMs / 1000).toFixed(2) + ' s' : '–';
  $('render-memory').textContent = bytes(r.browserRssBytes);
}

function render(st) {
  const a = st.agent, c = a.counters, now = st.now;
  $('agent-id').textContent = a.id;
  $('agent-state').replaceChildren(state(a.state));
  $('agent-uptime').textContent = 'up ' + dur(a.uptimeMs) + ' · v' + a.version;
  $('stat-fetched').textContent = num(c.fetched);
  $('stat-rate').textContent = rate(c.pagesPerSecond);
  $('stat-queued').textContent = num(c.queued);
  $('stat-inflight').textContent = num(c.inFlight);
  $('stat-bytes').textContent = bytes(c.bytes);
  $('stat-errors').textContent = num(Object.values(c.errors || {}).reduce((x, y) => x + y, 0));
  $('stat-exchange').textContent = num(c.urlsSent) + ' / ' + num(c.urlsReceived);
  renderTier(st.render);
  drawChart(st.throughput || [], now);
  const members = st.mesh.members.slice().sort((p, q) => (q.self - p.self) || (p.id < q.id ? -1 : 1));
  $('mesh-summary').textContent = members.length + (members.length === 1 ? ' member' : ' members') + (st.mesh.crawlId ? ' · crawl ' + st.mesh.crawlId : '');
  fillTable($('members').tBodies[0], members.map((m) => [
    el('td', { title: m.id }, m.id.length > 20 ? m.id.slice(0, 8) + '…' + m.id.slice(-8) : m.id, m.self ? ' (this agent)' : ''),
    el('td', null, state(m.state)),
    td(num(m.capacity), 'num'),
    el('td', { class: 'num' }, shareBar(m.share), (m.share * 100).toFixed(1) + '%'),
    td(num(m.counters.fetched), 'num'), td(num(m.counters.queued), 'num'),
    td(num(m.counters.sent), 'num'), td(num(m.counters.received), 'num'),
    td(m.self ? '–' : ago(m.lastSeen, now)),
  ]), 9, 'No members known yet.');
  fillTable($('hosts').tBodies[0], (st.topHosts || []).map((h) => [
    td(h.host, 'break'), td(num(h.fetched), 'num'), td(num(h.queued), 'num'), td(num(h.errors), 'num'), td(h.paused ? 'paused' : ''),
  ]), 5, 'No hosts yet.');
  fillTable($('errors').tBodies[0], (st.recentErrors || []).map((e) => [
    td(time(e.at)), td(e.kind), td(e.url || e.host || '–', 'break'), td(e.message, 'break'),
  ]), 4, 'No errors.');
}

async function poll() {
  if (polling) return;
  polling = true;
  try {
    render(await api('/status'));
    $('conn').textContent = 'Updated ' + new Date().toLocaleTimeString();
    $('conn').className = '';
    announce(true, 'Connected to the agent; figures update every second.');
  } catch (err) {
    $('conn').textContent = 'Not updating: ' + err.message;
    $('conn').className = 'bad';
    announce(false, 'Not updating: ' + err.message);
  } finally {
    polling = false;
    setTimeout(poll, 1000);
  }
}

function kv(pairs) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, v] of pairs) dl.append(el('dt', null, k), el('dd', null, v));
  return dl;
}

function urlSummary(r) {
  const f = r.fetched;
  return kv([
    ['URL', r.normalized], ['Owner', (r.owner || '–') + (r.local ? ' (this agent)' : '')], ['State', r.state],
    ['Seen', r.seen ? 'yes' : 'no'], ['Queued', r.queued ? 'yes' : 'no'],
    ['Fetched', f ? stamp(f.at) + ' · HTTP ' + f.status : 'not yet'],
    ['Digest', f && f.digest ? f.digest : '–'], ['SimHash', f && f.simhash ? f.simhash : '–'],
    ['WARC', f && f.warc ? f.warc.filename + ' @ ' + f.warc.offset + ' (' + f.warc.length + ' bytes)' : '–'],
  ]);
}

function hostSummary(h) {
  const p = h.politeness, rb = h.robots;
  const box = el('div');
  box.append(kv([
    ['Host', h.host], ['Owner', (h.owner || '–') + (h.local ? ' (this agent)' : '')],
    ['Queue', num(h.queue.depth) + (h.queue.inFlight ? ' · fetching now' : '')],
    ['robots.txt', rb ? rb.state + (rb.status != null ? ' (HTTP ' + rb.status + ')' : '') + (rb.group ? ' · group ' + rb.group : '') + ' · ' + rb.ruleCount + ' rules' : '–'],
    ['Politeness', p ? (p.paused ? 'paused · ' : '') + 'delay ' + p.delayMs + ' ms · next ' + (p.nextAllowedAt ? time(p.nextAllowedAt) : '–') + ' · error run ' + p.errorRun : '–'],
    ['Errors', Object.entries(h.errors).map(([k, v]) => k + ' ' + v).join(', ') || 'none'],
  ]));
  if (h.lastFetches.length) {
    const t = el('table', null, el('caption', { class: 'visually-hidden' }, 'Last fetches of ' + h.host),
      el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'When'), el('th', { scope: 'col' }, 'Status'), el('th', { scope: 'col' }, 'URL'))), el('tbody'));
    fillTable(t.tBodies[0], h.lastFetches.map((f) => [td(time(f.at)), td(f.status != null ? f.status : (f.error || 'error')), td(f.url, 'break')]), 3, '');
    box.append(t);
  }
  return box;
}

async function inspect(ev) {
  ev.preventDefault();
  const q = $('q').value.trim();
  const out = $('inspect-result');
  if (!q) { out.replaceChildren(el('p', { class: 'error' }, 'Type a URL or a host name.')); return; }
  const isUrl = /^[a-z][a-z0-9+.-]*:\\/\\//i.test(q) || q.includes('/');
  const target = isUrl && !/^[a-z][a-z0-9+.-]*:\\/\\//i.test(q) ? 'http://' + q : q;
  out.replaceChildren(el('p', null, 'Looking up ' + target + '…'));
  try {
    const body = isUrl ? await api('/urls?url=' + encodeURIComponent(target)) : await api('/hosts/' + encodeURIComponent(target.toLowerCase()));
    out.replaceChildren(
      el('h3', null, isUrl ? 'URL' : 'Host'),
      isUrl ? urlSummary(body) : hostSummary(body),
      el('details', null, el('summary', null, 'Raw JSON'), el('pre', null, JSON.stringify(body, null, 2))));
  } catch (err) {
    out.replaceChildren(el('p', { class: 'error' }, err.message));
  }
}

$('inspect').addEventListener('submit', inspect);
$('auth-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  token = $('token').value.trim();
  sessionStorage.setItem('ubicrawl-token', token);
  $('auth').hidden = true;
});
poll();
`;

const HTML_HEAD = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ubicrawl agent</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>ubicrawl</h1>
  <span class="meta">agent <code id="agent-id">…</code></span>
  <span id="agent-state"></span>
  <span class="meta" id="agent-uptime"></span>
  <span class="meta" id="conn">Connecting…</span>
  <span class="visually-hidden" id="announce" role="status"></span>
</header>
<main>
  <section id="auth" class="wide" hidden aria-labelledby="auth-h">
    <h2 id="auth-h">Bearer token required</h2>
    <form id="auth-form">
      <div><label for="token">API token (kept in this tab only)</label><input id="token" type="password" autocomplete="off" required></div>
      <button type="submit">Use token</button>
    </form>
  </section>
  <section class="wide" aria-labelledby="overview-h">
    <h2 id="overview-h">This agent</h2>
    <dl class="tiles">
      <div><dt>Pages fetched</dt><dd id="stat-fetched">–</dd></div>
      <div><dt>Pages/s (recent)</dt><dd id="stat-rate">–</dd></div>
      <div><dt>Queued</dt><dd id="stat-queued">–</dd></div>
      <div><dt>In flight</dt><dd id="stat-inflight">–</dd></div>
      <div><dt>Downloaded</dt><dd id="stat-bytes">–</dd></div>
      <div><dt>Errors</dt><dd id="stat-errors">–</dd></div>
      <div><dt>URLs sent / received</dt><dd id="stat-exchange">–</dd></div>
    </dl>
  </section>
  <section id="render" class="wide" hidden aria-labelledby="render-h">
    <h2 id="render-h">Rendering <span class="meta" id="render-mode"></span></h2>
    <dl class="tiles">
      <div><dt>Render queue</dt><dd id="render-queue">–</dd></div>
      <div><dt>Rendering now</dt><dd id="render-active">–</dd></div>
      <div><dt>Rendered</dt><dd id="render-done">–</dd></div>
      <div><dt>Timeout / budget / crashed</dt><dd id="render-failed">–</dd></div>
      <div><dt>Mean render time</dt><dd id="render-time">–</dd></div>
      <div><dt>Browser memory</dt><dd id="render-memory">–</dd></div>
    </dl>
  </section>
  <section class="wide" aria-labelledby="tp-h">
    <h2 id="tp-h">Throughput</h2>
    <figure>
      <svg id="chart" viewBox="0 0 800 200" role="img" aria-label="Pages per second over the last 5 minutes"></svg>
      <figcaption id="chart-caption">Waiting for data…</figcaption>
    </figure>
  </section>
  <section class="wide" aria-labelledby="mesh-h">
    <h2 id="mesh-h">Mesh <span class="meta" id="mesh-summary"></span></h2>
    <table id="members">
      <caption class="visually-hidden">Mesh members as this agent sees them</caption>
      <thead><tr><th scope="col">Member</th><th scope="col">State</th><th scope="col" class="num">Capacity</th><th scope="col" class="num">Share of hosts</th>
        <th scope="col" class="num">Fetched</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Received</th><th scope="col">Last seen</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section aria-labelledby="hosts-h">
    <h2 id="hosts-h">Top hosts</h2>
    <table id="hosts">
      <caption class="visually-hidden">Hosts with the most fetched pages</caption>
      <thead><tr><th scope="col">Host</th><th scope="col" class="num">Fetched</th><th scope="col" class="num">Queued</th><th scope="col" class="num">Errors</th><th scope="col">Paused</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section aria-labelledby="errors-h">
    <h2 id="errors-h">Recent errors</h2>
    <table id="errors">
      <caption class="visually-hidden">Most recent errors first</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Kind</th><th scope="col">Where</th><th scope="col">Message</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section class="wide" aria-labelledby="inspect-h">
    <h2 id="inspect-h">Inspect a URL or a host</h2>
    <form id="inspect" role="search">
      <div><label for="q">URL or host name</label><input id="q" name="q" type="search" placeholder="https://example.com/page or example.com" autocomplete="off" spellcheck="false"></div>
      <button type="submit">Inspect</button>
    </form>
    <div id="inspect-result" aria-live="polite"></div>
  </section>
</main>
<script>`;

const HTML_TAIL = `</script>
</body>
</html>
`;

export const DASHBOARD_HTML = HTML_HEAD + SCRIPT + HTML_TAIL;

const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** Allows exactly the inline style and script above, same-origin API calls, and nothing else. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
