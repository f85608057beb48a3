// Cost of the render tier (src/render/browser.ts) on a simple page: a shell that
// builds its navigation from a JSON file with two scripts, served on loopback.
//   npx tsc -p . && node dist/bench/render.js [--renders N] [--concurrency C]
// Prints the first render (browser launch included), then medians over N renders
// one at a time: wall ms per render, CPU ms per render (Chromium's whole process
// tree from /proc, exited helpers included through their parents' cutime/cstime,
// plus this process), browser RSS (process tree, PSS summed) after the renders;
// then pages/s with C renders at once.
//   node dist/bench/render.js --crawl N [--concurrency C]
// The whole pipeline instead: a crawl (startAgent, --render always, WARC on) of an
// N-page site whose every page is such a shell with its own JSON file; pages/s,
// CPU ms per page (this process + the browser, which is our child: its CPU is in
// our cutime/cstime once it has exited at the end of the crawl), the browser's
// peak memory (sampled from GET /status's source every 250 ms).
import { createServer } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { RenderPool, processTreeRss } from '../src/render/browser.js';
import { median } from './measure.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? Number(process.argv[i + 1]) : def;
}

const N = arg('renders', 20);
const C = arg('concurrency', 2);
const CLK_TCK = 100; // Linux USER_HZ

const SHELL = `<!doctype html><html><head><title>Shop</title><script src="/lib.js"></script><script src="/app.js"></script></head>
<body><a href="/static">static</a><div id="root"></div></body></html>`;
const APP_JS = `fetch('/nav.json').then((r) => r.json()).then((nav) => { const root = document.getElementById('root');
  for (const href of nav) { const a = document.createElement('a'); a.href = href; a.textContent = href; root.appendChild(a); } });`;
const NAV = JSON.stringify(Array.from({ length: 30 }, (_, i) => `/category/${i}`));

/** CPU ms of a process tree: utime + stime + cutime + cstime of each member (/proc/<pid>/stat fields 14-17). */
function treeCpuMs(root: number): number {
  const stats = new Map<number, string[]>();
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const s = readFileSync(`/proc/${n}/stat`, 'utf8');
      stats.set(Number(n), s.slice(s.lastIndexOf(')') + 2).split(' '));
    } catch { /* exited */ }
  }
  const children = new Map<number, number[]>();
  for (const [pid, f] of stats) {
    const ppid = Number(f[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(pid);
  }
  let ticks = 0;
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const f = stats.get(pid);
    if (f !== undefined) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    stack.push(...(children.get(pid) ?? []));
  }
  return (ticks * 1000) / CLK_TCK;
}

const selfCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

if (process.argv.includes('--crawl')) {
  await crawlBench(arg('crawl', 100), C);
  process.exit(0);
}

/** utime + stime + cutime + cstime of this process (its reaped children included), ms. */
function selfAndChildrenCpuMs(): number {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
}

async function crawlBench(pages: number, concurrency: number): Promise<void> {
  const { startAgent } = await import('../src/crawl/agent.js');
  const { AgentBackend } = await import('../src/crawl/backend.js');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const shell = (i: number) => `<!doctype html><html><head><title>Page ${i}</title><script src="/lib.js"></script><script defer src="/app.js"></script></head>
<body><div id="root" data-nav="/nav/${i}.json"></div></body></html>`;
  const app = `const root = document.getElementById('root');
fetch(root.dataset.nav).then((r) => r.json()).then((nav) => { for (const href of nav) { const a = document.createElement('a'); a.href = href; a.textContent = 'Page ' + href; root.appendChild(a); }
  const p = document.createElement('p'); p.textContent = 'Rendered ' + location.pathname; root.appendChild(p); });`;
  const site = createServer((req, res) => {
    const url = req.url ?? '/';
    let m: RegExpExecArray | null;
    const send = (type: string, body: string) => { res.writeHead(200, { 'content-type': type }); res.end(body); };
    if (url === '/robots.txt') send('text/plain', 'User-agent: *\nDisallow:\n');
    else if (url === '/lib.js') send('text/javascript', 'window.lib = 1;');
    else if (url === '/app.js') send('text/javascript', app);
    else if ((m = /^\/p\/(\d+)$/.exec(url)) !== null) send('text/html; charset=utf-8', shell(Number(m[1])));
    else if ((m = /^\/nav\/(\d+)\.json$/.exec(url)) !== null) {
      const i = Number(m[1]);
      send('application/json', JSON.stringify([2 * i + 1, 2 * i + 2].filter((j) => j < pages).map((j) => `/p/${j}`)));
    } else { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const port = (site.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'ubicrawl-render-bench-'));
  const cpu0 = selfAndChildrenCpuMs();
  const t0 = Date.now();
  const agent = await startAgent({
    dataDir: dir, seeds: [`http://bench.test:${port}/p/0`], untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 2,
    resolve: [{ host: 'bench.test', port, address: '127.0.0.1' }], logLevel: 'silent', sitemaps: { enabled: false },
    render: { mode: 'always', concurrency },
  });
  let peakRss = 0;
  // Second CPU reading: the live browser tree, sampled (misses the last interval; the first reading misses
  // whatever of the browser's helpers is not reaped through it).
  const treeCpu = new Map<number, number>();
  const backend = new AgentBackend(agent as never);
  const step = (agent as unknown as { render: { browserPid(): number | undefined } }).render;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, backend.status().render?.browserRssBytes ?? 0);
    const pid = step.browserPid();
    if (pid !== undefined) treeCpu.set(pid, treeCpuMs(pid));
  }, 250);
  const nodeCpu0 = selfCpuMs();
  const summary = await agent.done;
  clearInterval(sampler);
  const secs = (Date.now() - t0) / 1000;
  const cpu = selfAndChildrenCpuMs() - cpu0;
  const sampledCpu = selfCpuMs() - nodeCpu0 + [...treeCpu.values()].reduce((a, b) => a + b, 0);
  const r = summary.render!;
  console.log(`crawl of ${pages} JS-built pages, --render always, render concurrency ${concurrency}: ${summary.pages} pages fetched, ${r.renders.rendered} rendered (${JSON.stringify(r.renders)}) in ${secs.toFixed(1)} s: ${(r.renders.rendered / secs).toFixed(2)} pages/s`);
  console.log(`CPU: ${(cpu / Math.max(1, r.renders.rendered)).toFixed(0)} ms per rendered page (this process + the browser's whole process tree), browser launch included (sampled from the live browser tree: ${(sampledCpu / Math.max(1, r.renders.rendered)).toFixed(0)} ms); peak browser memory ${(peakRss / 2 ** 20).toFixed(0)} MiB (PSS summed)`);
  console.log(`subresources: ${JSON.stringify(r.subresources)}; conversion records ${r.conversionRecords}`);
  console.log(`load average during the run: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  site.close();
  rmSync(dir, { recursive: true, force: true });
}

const server = createServer((req, res) => {
  const body = req.url === '/lib.js' ? 'window.lib = 1;' : req.url === '/app.js' ? APP_JS : req.url === '/nav.json' ? NAV : undefined;
  if (body === undefined) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': req.url!.endsWith('.json') ? 'application/json' : 'text/javascript' });
  res.end(body);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const pool = new RenderPool({ allowed: () => true, acquire: async () => {}, release: () => {} }, { userAgent: 'ubicrawl-bench/0', concurrency: C, networkIdleMs: 200 });
const job = (i: number) => ({ url: `${origin}/p/${i}`, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from(SHELL) });

try {
  let t = Date.now();
  const first = await pool.render(job(0));
  if (first.outcome !== 'rendered') throw new Error(`first render: ${first.outcome} ${first.error ?? ''}`);
  console.log(`first render (launch included): ${Date.now() - t} ms, ${first.links.length} links, ${first.subresources.length} subresources`);
  const pid = pool.browserPid();
  if (pid === undefined) throw new Error('browser pid not found');

  const wall: number[] = [];
  const cpu: number[] = [];
  const nodeCpu: number[] = [];
  for (let i = 1; i <= N; i++) {
    const n0 = selfCpuMs();
    const c0 = treeCpuMs(pid) + n0;
    t = Date.now();
    const r = await pool.render(job(i));
    wall.push(Date.now() - t);
    const n1 = selfCpuMs();
    cpu.push(treeCpuMs(pid) + n1 - c0);
    nodeCpu.push(n1 - n0);
    if (r.outcome !== 'rendered' || r.links.length !== 31) throw new Error(`render ${i}: ${r.outcome} ${r.links.length} links`);
  }
  const rss = processTreeRss(pid);
  console.log(`one at a time, ${N} renders: median ${median(wall)} ms wall, ${median(cpu).toFixed(0)} CPU-ms per render (browser tree + node; of which node ${median(nodeCpu).toFixed(0)}; networkIdleMs 200 included in wall)`);
  console.log(`browser RSS (process tree, PSS summed): ${(rss / 2 ** 20).toFixed(0)} MiB`);

  t = Date.now();
  const c0 = treeCpuMs(pid) + selfCpuMs();
  const results = await Promise.all(Array.from({ length: N }, (_, i) => pool.render(job(1000 + i))));
  const secs = (Date.now() - t) / 1000;
  const bad = results.filter((r) => r.outcome !== 'rendered').length;
  console.log(`${C} at once, ${N} renders: ${(N / secs).toFixed(2)} pages/s, ${((treeCpuMs(pid) + selfCpuMs() - c0) / N).toFixed(0)} CPU-ms per render, ${bad} not rendered, peak-ish RSS ${(processTreeRss(pid) / 2 ** 20).toFixed(0)} MiB`);
  console.log(`pool: ${JSON.stringify(pool.stats())}`);
  console.log(`load average during the run: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} (${(await import('node:os')).cpus().length} cores)`);
} finally {
  await pool.close();
  server.close();
}
