// Mesh soak (docs/performance.md "Mesh soak"): many lightweight `ubicrawl join` agents on one machine, in three
// zones behind the WAN emulator (bench/wan: 60 ms between zones, 1 ms inside), with churn — a join, a graceful
// leave (SIGTERM) or a SIGKILL every 10–20 s, some agents returning with their data dir — on a synthetic web of a
// few thousand hosts (plus a small `.de` web that a `--zone-rule .de=eu` keeps in zone eu). After the churn phase
// the remaining agents run until the mesh is idle (bounded), then everything is stopped and the web server's
// request log is checked:
//
//   pages/s                    page requests (robots.txt left out) per second, churn phase and whole run
//   fetched twice              URLs requested more than once; "outside in-flight windows" are those whose
//                              earlier request was not made by an agent SIGKILLed within --window s after it
//                              (docs/mesh.md "Crashes": the in-flight window)
//   never requested            reachable from the seeds and allowed by robots.txt (bench/web/reachable.ts)
//                              but never requested, split by the stopped agents' stores (bench/soak-where.ts):
//                              still queued somewhere, reachable only through such pages, or lost (neither)
//   concurrent requests        two requests to one host overlapping in time at the server (any agents)
//   zone-rule violations       a .de host requested by an agent outside zone eu while eu had live members
//   ring balance per zone      hosts per agent (share of the ring × hosts) from a live agent's /status
//   cross-zone share           URLs forwarded to another zone / all URLs forwarded (each agent's /status)
//   replication cost           queued URLs sent to successors per page, and handoff gates that gave up
//                              waiting (the end summaries in the agents' logs; SIGKILLed runs have none)
//
//   node dist/bench/mesh-soak.js [--agents 12] [--minutes 5] [--hosts 2000] [--pages 3] [--seed 1]
//                                [--window 10] [--finish-minutes 5] [--keep DIR]
//
// Every agent is a child process; the bench stops by itself and kills every child it started (also on SIGINT).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePortRun } from './ports.js';
import { locate } from './soak-where.js';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb, checkPoliteness, type SyntheticWeb, type RequestRecord } from './web/index.js';
import { createInterface } from 'node:readline';
import { mulberry32 } from '../src/hash/mix.js';
import type { StatusResponse } from '../src/api/backend.js';

interface Args { agents: number; minutes: number; hosts: number; pages: number; seed: number; window: number; finishMinutes: number; grace: number; keep?: string; logLevel: string }
const USAGE = 'node dist/bench/mesh-soak.js [--agents 12] [--minutes 5] [--hosts 2000] [--pages 3] [--seed 1] [--window 10] [--finish-minutes 5] [--grace 30] [--keep DIR] [--log-level info]\n';

function parseArgs(argv: string[]): Args {
  const a: Args = { agents: 12, minutes: 5, hosts: 2000, pages: 3, seed: 1, window: 10, finishMinutes: 5, grace: 30, logLevel: 'info' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    if (k === '--help') { process.stdout.write(USAGE); process.exit(0); }
    if (k === '--keep') { a.keep = argv[++i]; continue; }
    // The agents' log level: debug adds each failed URL exchange session and dial with its error.
    if (k === '--log-level' && ['debug', 'info'].includes(argv[i + 1] ?? '')) { a.logLevel = argv[++i]!; continue; }
    const key = k.replace(/^--/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as Exclude<keyof Args, 'keep' | 'logLevel'>;
    const v = Number(argv[i + 1]);
    if (!['agents', 'minutes', 'hosts', 'pages', 'seed', 'window', 'finishMinutes', 'grace'].includes(key) || !Number.isFinite(v) || v <= 0) {
      process.stderr.write(`bad argument ${k} ${argv[i + 1] ?? ''}\n${USAGE}`);
      process.exit(2);
    }
    a[key] = v;
    i++;
  }
  if (a.agents < 6) { process.stderr.write('--agents must be at least 6 (two per zone)\n'); process.exit(2); }
  return a;
}

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '..', '..', 'bin', 'ubicrawl.js');
const ZONES = ['eu', 'us', 'ap'];
const RULE = '.de=eu';
// Small agents: few fetch slots, a tight heap, no WARC. Membership timing as docs/deploy.md "Three data centers"
// (heartbeat 1 s, dead after 5 s, --takeover-grace: a member silent for a few seconds on this loaded machine is
// suspect, not taken over at once).
const agentFlags = (a: Args) => ['--concurrency', '4', '--heap-growth', '10', '--min-delay', '250', '--delay-factor', '0', '--no-warc', '--no-sitemaps',
  '--heartbeat', '1000', '--dead-after', '5000', '--takeover-grace', `${a.grace}s`, '--progress', 'off', '--log-level', a.logLevel, '--api', '127.0.0.1:0'];
/** A graceful leave may take the agent's leave bound (src/config.ts mesh.leaveTimeoutMs, 120 s) plus its shutdown. */
const LEAVE_BOUND_MS = 150_000;
const BIN_RELAY = join(here, 'wan', 'relay.js');

interface RelayAgent { name: string; host: string; port: number; multiaddr: string }

/** The WAN emulator in its own process (its timers must not wait on this process's web server). */
async function startRelay(configFile: string): Promise<{ child: ChildProcess; agents: Map<string, RelayAgent> }> {
  const child = spawn(process.execPath, [BIN_RELAY, '--config', configFile], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`wan relay exited with ${code}`)));
  });
  const info = JSON.parse(line) as { agents: RelayAgent[] };
  child.stdout!.resume();
  return { child, agents: new Map(info.agents.map((x) => [x.name, x])) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = (): string => loadavg().map((x) => x.toFixed(1)).join(' ');

/** One agent slot: a fixed name, zone, source address, listen port and data dir; started again when it returns. */
interface Slot { name: string; zone: string; source: string; port: number; dir: string; proc?: ChildProcess; api: number; log: string; starts: number; exiting: boolean }
/** Per incarnation: the last /status figures read (URLs forwarded per zone). */
interface Forwarded { own: number; cross: number }
interface Event { t: number; kind: 'start' | 'join' | 'return' | 'leave' | 'kill' | 'exit'; slot: string; note?: string }

/** What the soak reads of an agent's end summary (src/crawl/summary.ts), printed pretty to its log. */
interface EndSummary { pages?: number; mesh?: { replicatedFrontier?: Record<string, number>; handoff?: Record<string, number> } }

/** The end summaries in an agent's log (one per run that stopped by itself): each a JSON object from a `{` line to a `}` line. */
function endSummaries(log: string): EndSummary[] {
  let text: string;
  try { text = readFileSync(log, 'utf8'); } catch { return []; }
  const out: EndSummary[] = [];
  for (const m of text.matchAll(/^\{\n[\s\S]*?^\}$/gm)) {
    try { out.push(JSON.parse(m[0]) as EndSummary); } catch { /* a run cut off while printing */ }
  }
  return out;
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const rand = mulberry32(a.seed);
  const base = a.keep ?? mkdtempSync(join(tmpdir(), 'ubicrawl-soak-'));
  mkdirSync(base, { recursive: true });
  const web = await startSyntheticWeb({ seed: a.seed, hosts: a.hosts, pagesPerHost: a.pages, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1000, max: 2500 }, sitemap: false });
  const deHosts = Math.max(4, Math.round(a.hosts / 20));
  const de = await startSyntheticWeb({ seed: a.seed + 1, hosts: deHosts, pagesPerHost: a.pages, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1000, max: 2500 }, sitemap: false, hostSuffix: 'web.de' });
  const seedsFile = join(base, 'seeds');
  writeFileSync(seedsFile, [...web.roots(), ...de.roots()].join('\n') + '\n');

  // Slots: the initial agents, then as many again for joiners (never-seen agents) during churn.
  // Listen ports below the ephemeral range (bench/ports.ts): a port the kernel picked as free would be taken by
  // an outgoing connection before its agent starts (or returns), and that agent would exit at once.
  const slots: Slot[] = [];
  const firstPort = await freePortRun(a.agents * 2);
  for (let i = 0; i < a.agents * 2; i++) {
    const zi = i % ZONES.length;
    slots.push({ name: `a${i}`, zone: ZONES[zi]!, source: `127.0.${10 + zi}.${1 + Math.floor(i / ZONES.length)}`, port: firstPort + i, dir: join(base, `a${i}`), api: 0, log: join(base, `a${i}.log`), starts: 0, exiting: false });
  }
  const relayConfig = join(base, 'wan.json');
  writeFileSync(relayConfig, JSON.stringify({
    agents: slots.map((s) => ({ name: s.name, zone: s.zone, source: s.source, target: `127.0.0.1:${s.port}` })),
    links: [
      { from: '*', to: '*', latency: '1ms' },
      { from: '*', to: '*', crossZone: true, latency: '60ms', jitter: '2ms' },
    ],
  }));
  const relay = await startRelay(relayConfig);
  const relayOf = (name: string): RelayAgent => relay.agents.get(name)!;
  const events: Event[] = [];
  const forwarded = new Map<string, Forwarded>(); // key: slot#start
  const live = () => slots.filter((s) => s.proc && !s.exiting);
  const running = () => slots.filter((s) => s.proc);
  const t0 = Date.now();
  const stamp = () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;
  const note = (e: Omit<Event, 't'>) => {
    events.push({ t: Date.now(), ...e });
    process.stdout.write(`${stamp()}  ${e.kind.padEnd(6)} ${e.slot} (${slots.find((s) => s.name === e.slot)?.zone})${e.note ? '  ' + e.note : ''}  live ${live().length}  load ${load()}\n`);
  };

  const killAll = () => {
    for (const s of slots) if (s.proc && s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
    if (relay.child.exitCode === null) relay.child.kill('SIGKILL');
  };
  process.once('exit', killAll);
  process.once('SIGINT', () => { killAll(); process.exit(130); });
  process.once('SIGTERM', () => { killAll(); process.exit(143); });

  const start = (s: Slot, kind: Event['kind'], extra: string[]) => {
    const peer = live().filter((p) => p.api > 0 && p !== s);
    const via = peer.length ? peer[Math.floor(rand() * peer.length)]! : slots[0]!;
    const r = relayOf(via.name);
    const self = relayOf(s.name);
    const fd = openSync(s.log, 'a');
    const args = [BIN, 'join', '--data-dir', s.dir, '--user-agent', `ubicrawl/0.1 (${s.name})`, ...agentFlags(a),
      '--listen', `/ip4/127.0.0.1/tcp/${s.port}`, '--announce', self.multiaddr, '--source-address', s.source,
      '--zone', s.zone, '--zone-rule', RULE, ...[...web.resolveArgs, ...de.resolveArgs].flatMap((x) => ['--resolve', x]),
      ...(via === s ? [] : ['--seed', `${r.host}:${r.port}`]), ...extra];
    const p = spawn(process.execPath, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    s.proc = p;
    s.api = 0;
    s.exiting = false;
    s.starts++;
    const inc = `${s.name}#${s.starts}`;
    note({ kind, slot: s.name, note: via === s ? 'first' : `via ${via.name}` });
    p.once('exit', (code, signal) => {
      if (s.proc === p) { s.proc = undefined; s.api = 0; s.exiting = false; }
      note({ kind: 'exit', slot: s.name, note: `${inc} code ${code} signal ${signal}` });
    });
  };

  /** Reads the API port from each running agent's log (`API listening`, once it has joined), then its /status. */
  const poll = async (): Promise<StatusResponse | undefined> => {
    let any: StatusResponse | undefined;
    await Promise.all(running().map(async (s) => {
      if (!s.api) {
        const text = readFileSync(s.log, 'utf8');
        const all = text.split('\n').filter((l) => l.includes('"API listening"'));
        const m = /"api":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(all[all.length - 1] ?? '');
        if (m && all.length >= s.starts) s.api = Number(m[1]);
        if (!s.api) return;
      }
      try {
        const st = await (await fetch(`http://127.0.0.1:${s.api}/status`, { signal: AbortSignal.timeout(3000) })).json() as StatusResponse;
        let own = 0;
        let cross = 0;
        for (const z of st.mesh.zones ?? []) { if (z.self) own += z.forwarded; else cross += z.forwarded; }
        forwarded.set(`${s.name}#${s.starts}`, { own, cross });
        if (!s.exiting && (!any || st.mesh.members.length > any.mesh.members.length)) any = st;
      } catch { /* leaving or busy: the last figures stand */ }
    }));
    return any;
  };

  // Start: the first agent with the roots, then the others one every 2 s, each through a member already up
  // (a cluster brought up machine by machine); the churn clock starts once all of them serve their API.
  const initial = slots.slice(0, a.agents);
  start(initial[0]!, 'start', ['--seed', seedsFile]);
  const upBy = Date.now() + 180_000;
  const waitUp = async (s: Slot) => { while (!s.api && s.proc && Date.now() < upBy) { await sleep(250); await poll(); } };
  await waitUp(initial[0]!);
  for (const s of initial.slice(1)) { start(s, 'start', []); await sleep(2000); }
  for (const s of initial) await waitUp(s);
  const churnStart = Date.now();
  process.stdout.write(`${stamp()}  ${initial.filter((s) => s.api).length} agents up; churn for ${a.minutes} min  load ${load()}\n`);

  const churnEnd = churnStart + a.minutes * 60_000;
  let nextEvent = Date.now() + 10_000 + rand() * 10_000;
  let lastStatus: StatusResponse | undefined;
  let lastPoll = 0;
  let churnRequests = 0;
  while (Date.now() < churnEnd) {
    await sleep(500);
    if (Date.now() - lastPoll > 5000) { lastPoll = Date.now(); lastStatus = (await poll()) ?? lastStatus; }
    if (Date.now() < nextEvent) continue;
    nextEvent = Date.now() + 10_000 + rand() * 10_000;
    const up = live();
    const stopped = slots.filter((s) => !s.proc && s.starts > 0);
    const fresh = slots.filter((s) => s.starts === 0);
    const perZone = (z: string) => up.filter((s) => s.zone === z).length;
    // Keep around --agents live: below, join or return; above, leave or kill; near it, any of the three.
    const r = rand();
    const kind: 'join' | 'leave' | 'kill' = up.length <= a.agents - 2 ? 'join' : up.length >= a.agents + 2 ? (r < 0.5 ? 'leave' : 'kill') : r < 1 / 3 ? 'join' : r < 2 / 3 ? 'leave' : 'kill';
    if (kind === 'join') {
      const back = stopped.length > 0 && (fresh.length === 0 || rand() < 0.5);
      const pool = back ? stopped : fresh;
      if (pool.length === 0) continue;
      const s = pool[Math.floor(rand() * pool.length)]!;
      start(s, back ? 'return' : 'join', []);
      continue;
    }
    // Never the last two of a zone: every zone keeps a member.
    const victims = up.filter((s) => perZone(s.zone) > 2 && s.api > 0);
    if (victims.length === 0) continue;
    const v = victims[Math.floor(rand() * victims.length)]!;
    if (kind === 'leave') {
      v.exiting = true;
      note({ kind, slot: v.name });
      const p = v.proc!;
      p.kill('SIGTERM');
      // A leave that hangs is ended; it then counts as a kill.
      setTimeout(() => { if (p.exitCode === null && p.signalCode === null) { note({ kind: 'kill', slot: v.name, note: `leave took over ${LEAVE_BOUND_MS / 1000} s` }); p.kill('SIGKILL'); } }, LEAVE_BOUND_MS).unref();
    } else {
      note({ kind, slot: v.name });
      v.exiting = true;
      v.proc!.kill('SIGKILL');
    }
  }
  churnRequests = web.requests().length + de.requests().length;
  const churnSecs = (Date.now() - churnStart) / 1000;
  process.stdout.write(`${stamp()}  churn over; waiting for the mesh to go idle (at most ${a.finishMinutes} min)  load ${load()}\n`);
  const ringAtChurnEnd = lastStatus;

  // Finish: until every running agent reports nothing queued or in flight and no request came for 15 s.
  const finishEnd = Date.now() + a.finishMinutes * 60_000;
  const lastRequest = () => Math.max(0, ...[...web.requests(), ...de.requests()].slice(-50).map((r) => r.start));
  let idleSince = 0;
  while (Date.now() < finishEnd) {
    await sleep(2000);
    lastStatus = (await poll()) ?? lastStatus;
    const busy = await Promise.all(running().filter((s) => s.api > 0).map(async (s) => {
      try {
        const st = await (await fetch(`http://127.0.0.1:${s.api}/status`, { signal: AbortSignal.timeout(3000) })).json() as StatusResponse;
        return st.agent.counters.queued + st.agent.counters.inFlight;
      } catch { return 1; }
    }));
    const quiet = busy.every((n) => n === 0) && Date.now() - lastRequest() > 15_000 && running().every((s) => s.api > 0);
    if (!quiet) { idleSince = 0; continue; }
    if (!idleSince) idleSince = Date.now();
    if (Date.now() - idleSince > 10_000) break;
  }
  const idle = idleSince > 0;
  process.stdout.write(`${stamp()}  ${idle ? 'idle' : 'finish bound reached'}; stopping ${running().length} agents  load ${load()}\n`);
  await poll();
  for (const s of running()) s.proc!.kill('SIGTERM');
  const stopBy = Date.now() + 60_000;
  while (running().length && Date.now() < stopBy) await sleep(250);
  killAll();
  const endSecs = (Date.now() - t0) / 1000;

  // --- The figures, from the web servers' request logs.
  const requests: RequestRecord[] = [...web.requests(), ...de.requests()].filter((r) => r.url !== null);
  const agentOf = (r: RequestRecord) => /\((a\d+)\)/.exec(r.userAgent)?.[1] ?? '?';
  const pagesOnly = requests.filter((r) => !r.path.startsWith('/robots.txt'));
  const kills = events.filter((e) => e.kind === 'kill');
  const byUrl = new Map<string, RequestRecord[]>();
  for (const r of pagesOnly) { let l = byUrl.get(r.url!); if (!l) byUrl.set(r.url!, l = []); l.push(r); }
  let twice = 0;
  const unexplained: Array<{ url: string; reqs: RequestRecord[] }> = [];
  for (const [url, reqs] of byUrl) {
    if (reqs.length < 2) continue;
    reqs.sort((x, y) => x.start - y.start);
    for (let i = 1; i < reqs.length; i++) {
      twice++;
      const prev = reqs[i - 1]!;
      const who = agentOf(prev);
      const explained = kills.some((k) => k.slot === who && prev.start <= k.t && prev.start >= k.t - a.window * 1000);
      if (!explained) { unexplained.push({ url, reqs }); break; }
    }
  }
  const fetched = new Set(pagesOnly.map((r) => r.url!));
  const reach = [...web.reachable().reachableAllowed, ...de.reachable().reachableAllowed];
  const lost = reach.filter((u) => !fetched.has(u));
  const concurrent = checkPoliteness(requests, 0, { concurrency: true }).filter((v) => v.kind === 'concurrent');
  // Zone rule: a .de host fetched outside eu while eu had a live member (always here: two eu agents stay).
  const zoneOfSlot = new Map(slots.map((s) => [s.name, s.zone]));
  const deOutside = de.requests().filter((r) => zoneOfSlot.get(agentOf(r)) !== 'eu');
  const churnPages = pagesOnly.filter((r) => r.start >= churnStart && r.start <= churnStart + churnSecs * 1000).length;
  const firstReq = Math.min(...pagesOnly.map((r) => r.start));
  const lastReq = Math.max(...pagesOnly.map((r) => r.start));
  let own = 0;
  let cross = 0;
  for (const f of forwarded.values()) { own += f.own; cross += f.cross; }

  const out: string[] = [];
  const count = (k: Event['kind']) => events.filter((e) => e.kind === k).length;
  out.push('', `mesh soak: ${a.agents} agents (3 zones), ${a.minutes} min churn, web ${a.hosts} hosts + ${deHosts} .de hosts × ${a.pages} pages, seed ${a.seed}; load now ${load()}`);
  out.push(`events: ${count('start')} starts, ${count('join')} joins (new agents), ${count('return')} returns (with their data dir), ${count('leave')} leaves (SIGTERM), ${kills.length} SIGKILLs`);
  out.push(`pages: ${fetched.size} distinct of ${reach.length} reachable; ${pagesOnly.length} page requests, ${requests.length - pagesOnly.length} robots.txt`);
  out.push(`pages/s: ${(churnPages / churnSecs).toFixed(1)} during churn (${churnPages} in ${churnSecs.toFixed(0)} s); ${(pagesOnly.length / Math.max(1, (lastReq - firstReq) / 1000)).toFixed(1)} first to last request (${((lastReq - firstReq) / 1000).toFixed(0)} s); run ${endSecs.toFixed(0)} s, ${idle ? 'ended idle' : 'NOT idle at the finish bound'}`);
  out.push(`fetched twice: ${twice}, of which outside in-flight windows (earlier request not by an agent SIGKILLed within ${a.window} s after it): ${unexplained.length} URLs`);
  for (const u of unexplained.slice(0, 10)) out.push(`  ${u.url}: ${u.reqs.map((r) => `${agentOf(r)}@${((r.start - t0) / 1000).toFixed(1)}s`).join(' ')}`);
  // Where the unrequested pages are, from the stopped agents' stores (bench/soak-where.ts): still queued
  // somewhere (a frontier, a replica held in standby, an outbox) is work the bench stopped before, not a loss.
  const where = await locate(lost, slots.filter((s) => s.starts > 0).map((s) => ({ name: s.name, dir: s.dir })));
  const queuedPlace = /:(frontier|standby|outbox|replicas)$/;
  const stillQueued = lost.filter((u) => where.get(u)!.some((w) => queuedPlace.test(w)));
  // Pages reachable from those still queued (bench/web/reachable.ts from them as seeds) would be found once they
  // are fetched: behind unfinished work. An upper bound of what that excuses (a path may pass through pages
  // already fetched, whose links were then lost); the rest is lost outright.
  const queuedSet = new Set(stillQueued);
  const isDe = (u: string) => new URL(u).hostname.endsWith('web.de');
  const downstream = new Set([...web.reachable({ seeds: stillQueued.filter((u) => !isDe(u)) }).reachableAllowed, ...de.reachable({ seeds: stillQueued.filter(isDe) }).reachableAllowed]);
  const behind = lost.filter((u) => !queuedSet.has(u) && downstream.has(u));
  const gone = lost.filter((u) => !queuedSet.has(u) && !downstream.has(u));
  out.push(`never requested (reachable, allowed): ${lost.length} — ${idle ? 'the mesh had gone idle' : 'NOT idle: the finish bound came first, so these are mostly unfinished work'}:`);
  out.push(`  still queued in an agent's store at the end (frontier, standby replica or outbox): ${stillQueued.length}; reachable only through those (not found yet): ${behind.length}`);
  out.push(`lost (never requested, queued nowhere, not behind a queued page): ${gone.length}`);
  const describe = (u: string) => {
    const host = new URL(u).hostname;
    const hostReqs = requests.filter((r) => r.host === host);
    return `  ${u}: host requested ${hostReqs.length}× by ${[...new Set(hostReqs.map(agentOf))].join(',')} (last at ${hostReqs.length ? ((Math.max(...hostReqs.map((r) => r.start)) - t0) / 1000).toFixed(1) + 's' : '-'}); in stores: ${where.get(u)!.join(' ') || 'nowhere'}`;
  };
  for (const u of gone.slice(0, 10)) out.push(describe(u));
  if (stillQueued.length) out.push('  still queued, e.g.:');
  for (const u of stillQueued.slice(0, 5)) out.push(describe(u));
  const concHosts = new Set(concurrent.map((v) => v.key));
  out.push(`concurrent-request violations: ${concurrent.length} (on ${concHosts.size} hosts)`);
  for (const v of concurrent.slice(0, 10)) out.push(`  ${v.key}: ${agentOf(v.first)} ${v.first.path} @${((v.first.start - t0) / 1000).toFixed(2)}s–${v.first.end ? ((v.first.end - t0) / 1000).toFixed(2) + 's' : 'open'} and ${agentOf(v.second)} ${v.second.path} @${((v.second.start - t0) / 1000).toFixed(2)}s`);
  out.push(`zone rule ${RULE}: ${de.requests().length} requests to .de hosts, ${deOutside.length} by agents outside eu`);
  const ring = ringAtChurnEnd ?? lastStatus;
  if (ring) {
    out.push(`ring balance per zone at the end of churn (hosts per agent = ring share × ${a.hosts + deHosts}, from one agent's /status):`);
    for (const z of ZONES) {
      const ms = ring.mesh.members.filter((m) => (m.zone ?? '') === z && m.share > 0);
      const hosts = ms.map((m) => m.share * (a.hosts + deHosts));
      const mean = hosts.reduce((x, y) => x + y, 0) / Math.max(1, hosts.length);
      out.push(`  ${z}: ${ms.length} owners, hosts per agent min ${Math.min(...hosts).toFixed(0)} mean ${mean.toFixed(0)} max ${Math.max(...hosts).toFixed(0)} (max/mean ${(Math.max(...hosts) / mean).toFixed(2)})`);
    }
  }
  const perAgentHosts = new Map<string, Set<string>>();
  for (const r of pagesOnly) { const k = agentOf(r); let s = perAgentHosts.get(k); if (!s) perAgentHosts.set(k, s = new Set()); s.add(r.host); }
  out.push(`hosts requested per agent over the run: ${[...perAgentHosts].sort((x, y) => Number(x[0].slice(1)) - Number(y[0].slice(1))).map(([k, s]) => `${k}(${zoneOfSlot.get(k)}) ${s.size}`).join(', ')}`);
  out.push(`URLs forwarded across zones: ${cross} of ${own + cross} forwarded (${((100 * cross) / Math.max(1, own + cross)).toFixed(1)} %), summed over ${forwarded.size} agent runs' last /status`);
  // Replication cost and handoff waits, from the end summaries in the agents' logs (a SIGKILLed run has none).
  const ends = slots.filter((s) => s.starts > 0).flatMap((s) => endSummaries(s.log));
  const sum = (f: (x: EndSummary) => number | undefined) => ends.reduce((t, x) => t + (f(x) ?? 0), 0);
  const endPages = sum((x) => x.pages);
  const sent = sum((x) => x.mesh?.replicatedFrontier?.sent);
  out.push(`replication cost (--replicas 1; the ${ends.length} agent runs that ended with a summary, ${endPages} pages): ${sent} queued URLs sent to successors (${(sent / Math.max(1, endPages)).toFixed(2)} per page), ${sum((x) => x.mesh?.replicatedFrontier?.seenCaughtUp)} seen entries caught up, ${sum((x) => x.mesh?.replicatedFrontier?.promoted)} promoted after a death; plus one replica seen entry per settled page`);
  out.push(`handoff gates (same runs): ${sum((x) => x.mesh?.handoff?.gates)} opened, ${sum((x) => x.mesh?.handoff?.timedOut)} gave up waiting for a marker (each held its hosts for its whole timeout)`);
  const unexpected = events.filter((e) => e.kind === 'exit' && / code [1-9]/.test(e.note ?? ''));
  out.push(`agent exits with an error: ${unexpected.length}${unexpected.length ? ' (' + unexpected.map((e) => e.note).join('; ') + '; see their logs)' : ''}`);
  out.push(`requests during churn: ${churnRequests}; agent logs and data ${a.keep ? 'kept in ' + base : 'removed'}`);
  process.stdout.write(out.join('\n') + '\n');
  writeFileSync(join(base, 'report.txt'), out.join('\n') + '\n');
  if (a.keep) writeFileSync(join(base, 'lost.json'), JSON.stringify(Object.fromEntries(where)));
  if (a.keep) writeFileSync(join(base, 'requests.jsonl'), requests.map((r) => JSON.stringify({ agent: agentOf(r), host: r.host, path: r.path, s: (r.start - t0) / 1000, e: r.end ? (r.end - t0) / 1000 : null, status: r.status })).join('\n') + '\n');
  writeFileSync(join(base, 'events.json'), JSON.stringify(events.map((e) => ({ ...e, s: (e.t - t0) / 1000 }))));

  relay.child.kill('SIGTERM');
  await web.close();
  await de.close();
  if (!a.keep) rmSync(base, { recursive: true, force: true });
  process.exit(0); // the web servers' keep-alive sockets would hold the process
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1); });
