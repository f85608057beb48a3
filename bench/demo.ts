// `npm run demo`: a crawl of a local synthetic web, no internet needed.
// Starts the synthetic web on loopback, runs `ubicrawl join` against it with a
// live progress display, then shows where the WARC files are and what is in them.
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, resolve, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from './web/index.js';
import { freePortRun } from './ports.js';
import { readWarc, verifyWarc } from '../src/warc/reader.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'ubicrawl.js');
const DATA = resolve(process.env.UBICRAWL_DEMO_DIR ?? join(ROOT, 'ubicrawl-demo'));

interface Status { agent: { counters: { fetched: number; queued: number } }; mesh: { members: Array<{ state: string }> } }

async function status(api: string): Promise<Status | undefined> {
  // Not yet answering (the API is bound before the agent runs: 503 until then) counts as no status.
  try {
    const res = await fetch(`${api}/status`);
    return res.ok ? (await res.json()) as Status : undefined;
  } catch { return undefined; }
}

async function until(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('the agents did not form a mesh in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const web = await startSyntheticWeb({
    seed: 42, hosts: 24, pagesPerHost: 30, outLinks: 8, crossHostShare: 0.25, pageBytes: { min: 8000, max: 20000 },
    robots: 'mixed', variantShare: 0.1, errorMix: { notFound: 0.03, redirect: 0.04, serverError: 0.02 },
    latencyMs: 5,
  });
  const expected = web.reachable();
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const say = (s: string) => process.stdout.write(s + '\n');
  say(`ubicrawl demo: a synthetic web of ${web.hostCount} hosts on 127.0.0.1:${web.port}`);
  say(`  ${expected.reachableAllowed.size} pages reachable and allowed by robots.txt, ${expected.disallowed.size} disallowed`);
  say(`  crawling with a 200 ms per-host delay, data in ${relative(process.cwd(), DATA) || '.'}\n`);
  const base = await freePortRun(4); // p2p for agent a, then the three APIs
  const children: ReturnType<typeof spawn>[] = [];
  process.once('exit', () => { for (const c of children) c.kill('SIGKILL'); });
  const startAgent = (name: string, i: number) => {
    const args = ['join', '--data-dir', join(DATA, name), '--until-idle', '--min-delay', '200', '--concurrency', '16',
      '--progress', 'off', '--log-level', 'warn', '--listen', `/ip4/127.0.0.1/tcp/${i === 0 ? base : 0}`, '--api', `127.0.0.1:${base + 1 + i}`,
      '--summary', join(DATA, `${name}-summary.json`), '--heartbeat', '500', '--retries', '1', '--retry-delay', '500', '--user-agent', `ubicrawl/0.1 (${name})`,
      ...(i > 0 ? ['--seed', `127.0.0.1:${base}`] : []), ...web.resolveArgs.flatMap((r) => ['--resolve', r])];
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(child);
    return { name, api: `http://127.0.0.1:${base + 1 + i}`, done: new Promise<number | null>((r) => child.once('close', r)) };
  };
  // Agent a starts the mesh; b and c join through it once it answers.
  const first = startAgent('a', 0);
  await until(async () => (await status(first.api)) !== undefined, 30_000);
  const agents = [first, startAgent('b', 1), startAgent('c', 2)];
  say(`three agents (a, b, c) form a mesh on 127.0.0.1:${base}; dashboards at ${agents.map((a) => a.api).join(' ')}`);
  // Seed once every agent sees all three, so each host has one owner from the start.
  // A joiner owns hosts once it has finished joining: its state is then active (docs/mesh.md "Admission").
  for (const a of agents) await until(async () => ((await status(a.api))?.mesh.members.filter((m) => m.state === 'active').length ?? 0) >= 3, 30_000);
  // Changes need the agent's token, which it wrote to its data dir (docs/operations.md).
  const token = readFileSync(join(DATA, 'a', 'api.token'), 'utf8').trim();
  const res = await fetch(`${agents[0]!.api}/seeds`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ urls: web.roots() }),
  });
  if (!res.ok) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
  const routed = (await res.json()) as { routed: Record<string, number> };
  say(`seeded ${web.roots().length} roots through agent a, routed to their owners: ${JSON.stringify(routed.routed)}\n`);
  const tty = process.stdout.isTTY;
  // An agent whose run ended answers no more: its last figure stays in the total.
  const lastFetched = new Map<string, number>();
  const ticker = setInterval(async () => {
    const parts: string[] = [];
    for (const a of agents) {
      const st = await status(a.api);
      if (!st) { parts.push(`${a.name}: done, ${lastFetched.get(a.name) ?? 0} pages`); continue; }
      lastFetched.set(a.name, st.agent.counters.fetched);
      parts.push(`${a.name}: ${st.agent.counters.fetched} pages, ${st.agent.counters.queued} queued`);
    }
    let total = 0;
    for (const n of lastFetched.values()) total += n;
    const line = `  ${parts.join('  |  ')}  |  total ${total}`;
    if (tty) process.stdout.write(`\r\x1b[K${line}`); else say(line);
  }, 1000);
  const codes = await Promise.all(agents.map((a) => a.done));
  clearInterval(ticker);
  if (tty) process.stdout.write('\n');
  const log = web.requests();
  await web.close();
  if (codes.some((c) => c !== 0)) { process.stderr.write(`demo: an agent exited with ${codes.join(', ')}\n`); process.exit(1); }

  say('\neach agent\'s share (hosts are owned by exactly one agent, by consistent hashing of the host name):');
  for (const a of agents) {
    const mine = log.filter((r) => (r.userAgent ?? '').includes(`(${a.name})`));
    say(`  agent ${a.name}: ${new Set(mine.map((r) => r.host)).size} hosts, ${mine.filter((r) => !r.path.startsWith('/robots')).length} page requests`);
  }
  let pages = 0;
  let blocked = 0;
  for (const a of agents) {
    const sm = JSON.parse(readFileSync(join(DATA, `${a.name}-summary.json`), 'utf8')) as Record<string, number>;
    pages += sm.pages!;
    blocked += sm.robotsBlocked!;
  }
  // A 5xx or 429 answer is retried on purpose (--retries): only the other answers must be one per URL.
  const pageLog = log.filter((r) => !r.path.startsWith('/robots'));
  const answered = pageLog.filter((r) => r.status < 500 && r.status !== 429);
  say(`\ncrawl finished: ${pages} pages, ${blocked} URLs blocked by robots.txt, none fetched twice: ${new Set(answered.map((r) => r.url)).size === answered.length ? 'yes' : 'no'}` +
    ` (${pageLog.length - answered.length} 5xx/429 answers retried by design)`);
  const files: string[] = [];
  for (const a of agents) {
    const warcDir = join(DATA, a.name, 'warc');
    for (const f of readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz')).sort()) files.push(join(warcDir, f));
  }
  say('\nWARC files (WARC/1.1, one gzip member per record, a CDXJ index next to each):');
  for (const f of files) {
    const v = await verifyWarc(f);
    say(`  ${relative(process.cwd(), f)}  ${(statSync(f).size / 1024).toFixed(0)} KiB  ${v.records} records, ${v.responses} responses, digests ${v.digestErrors.length === 0 ? 'verified' : 'FAILED'}`);
  }
  say('\nthe first records of the first file:');
  let shown = 0;
  for await (const rec of readWarc(files[0]!)) {
    say(`  ${rec.type.padEnd(9)} ${rec.headers['WARC-Target-URI'] ?? ''}  @${rec.offset}+${rec.length}`);
    if (++shown >= 6) break;
  }
  say('\nto read them:');
  say(`  zcat ${relative(process.cwd(), files[0]!)} | less     # plain text, record by record`);
  say(`  node bin/ubicrawl.js warc get --dir ${relative(process.cwd(), dirname(files[0]!))} <url>     # one stored page, through the CDXJ index`);
  say('  any WARC tool (warcio, pywb, …) reads them too');
}

main().catch((err) => { process.stderr.write(`demo failed: ${(err as Error).stack}\n`); process.exit(1); });
