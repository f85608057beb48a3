// Hostile peers (docs/mesh.md "Admission"): a libp2p node on the agents' own
// stack, driven by the test, misbehaves while three honest agent processes
// crawl a synthetic web. Each test checks that the crawl is complete, that no
// page is fetched twice (beyond the in-flight window where ownership churns),
// that nothing the hostile peer slipped in is fetched (a loopback server the
// test watches), that disk and the member table stay bounded, and that every
// refusal is counted in the agents' summaries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as lp from 'it-length-prefixed';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Message } from '@libp2p/interface';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { HostRing } from '../src/assign/ring.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import {
  PROTOCOL_URLS, SEEN_ONLY_FLAG, encodeHandoffMarker, REPLICA_SEEN_HOPS, MAX_BATCH_URLS, decodeAck, decodeHeartbeat, encodeBatchFrame, encodeHeartbeat, membersTopic,
  type Heartbeat, type UrlItem,
} from '../src/mesh/wire.js';
import { hostOf } from '../src/url/normalize.js';
import { inFlightWindow, tempDir } from './helpers.js';
import { CONCURRENCY, listeningOn, membershipEvents, pageCounts, seedThroughApi, startAgentProcess, waitMembers, whoFetched, type AgentProc } from './mesh-agents.js';

/**
 * Membership timing of the honest agents. Four test files at once on 2 cores delay an honest agent's heartbeats
 * and acknowledgements by seconds: at --dead-after 1000 and --peer-stall 3000, honest members were left out of
 * each other's rings for a stall of 3.0–3.6 s (50 times in 3 parallel runs of this file at a load average of
 * 10–20), their hosts moved, and pages were fetched twice; at a load of 34–44, 9 live members were declared dead too.
 */
const HEARTBEAT = 500;
const DEAD_AFTER = 3000;
/** Only (d) needs the stall rule to fire, on the member that acknowledges nothing: the others never stall this long. */
const PEER_STALL = 30_000;
/** (d): the stall rule on a member that never acknowledges; an honest agent's acknowledgements lag less than this under load. */
const PEER_STALL_D = 10_000;
/** (e): the flood's limit, URLs a second per sender, and the size of each of its 8 batches. */
const FLOOD_RATE = 100;
const TOPIC = membersTopic('default');
/** Disk per honest agent (WARCs of ≈ 500 pages of ≤ 3 KB, LevelDB, outbox): far below this. */
const MAX_DATA_DIR_BYTES = 64 << 20;
/** Members an honest agent may list: 3 honest + the hostile identities alive at once (churn: about 3). */
const MAX_MEMBERS = 10;

// ---------------------------------------------------------------- the honest mesh

interface Watch { server: Server; port: number; hits: string[] }

/** A loopback server the crawl must never reach: hostile batches name URLs on it. */
async function startWatch(): Promise<Watch> {
  const hits: string[] = [];
  const server = createServer((req, res) => { hits.push(`${req.headers.host}${req.url}`); res.end('secret'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

interface Mesh {
  web: SyntheticWeb;
  watch: Watch;
  dir: string;
  agents: AgentProc[];
  apis: number[];
  port: number;
  summaries: string[];
  expected: Set<string>;
  maxMembers: number;
  stopPolling: () => void;
  /** Stops everything the mesh started (idempotent; for `finally`). */
  close: () => Promise<void>;
}

let meshNo = 0;

/**
 * Three agents on loopback, all members of each other's ring, then the crawl
 * is seeded (before anything else: an `--until-idle` mesh that formed and has
 * exchanged its handoff markers, but has no seeds, is idle and ends).
 * `pagesPerHost`: 10, so that the crawl outlasts what the test does meanwhile (a churn of identities, a
 * stall deadline, a rate-limited flood, garbage frames sent one after the other).
 */
async function startMesh(extra: string[] = [], pagesPerHost = 10, latencyMs?: (host: string, path: string, hostIndex: number) => number): Promise<Mesh> {
  const n = meshNo++;
  const web = await startSyntheticWeb({ seed: 11 + n, hosts: 50, pagesPerHost, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1000, max: 2500 }, latencyMs });
  const watch = await startWatch();
  const dir = tempDir();
  const summaries = [0, 1, 2].map((i) => join(dir, `summary-a${i}.json`));
  const common = (i: number) => ['--api', '127.0.0.1:0', '--summary', summaries[i]!, '--heartbeat', String(HEARTBEAT), '--dead-after', String(DEAD_AFTER),
    '--peer-stall', String(PEER_STALL), '--resolve', `watched.test:${watch.port}:127.0.0.1`, ...extra];
  const agents = [startAgentProcess(web, dir, 'a0', ['--listen', '/ip4/127.0.0.1/tcp/0', ...common(0)])];
  const { mesh: port, api: api0 } = await listeningOn(agents[0]!, { api: true });
  for (const i of [1, 2]) agents.push(startAgentProcess(web, dir, `a${i}`, ['--listen', '/ip4/127.0.0.1/tcp/0', '--seed', `127.0.0.1:${port}`, ...common(i)]));
  const apis = [api0];
  for (const a of agents.slice(1)) apis.push((await listeningOn(a, { api: true })).api);
  for (const api of apis) await waitMembers(api, 3);
  await seedThroughApi(apis[2]!, web.roots(), join(dir, 'a2'));
  let closed = false;
  const mesh: Mesh = {
    web, watch, dir, agents, apis, port, summaries, expected: web.reachable().reachableAllowed, maxMembers: 0, stopPolling: () => {},
    close: async () => {
      mesh.stopPolling();
      if (closed) return;
      closed = true;
      for (const a of agents) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
      await new Promise((r) => watch.server.close(r));
      await web.close();
    },
  };
  // The member table of every agent, sampled while the test runs.
  let polling = true;
  mesh.stopPolling = () => { polling = false; };
  void (async () => {
    while (polling) {
      for (const api of apis) {
        try {
          const st = await (await fetch(`http://127.0.0.1:${api}/status`)).json() as { mesh: { members: unknown[] } };
          mesh.maxMembers = Math.max(mesh.maxMembers, st.mesh.members.length);
        } catch { /* exiting */ }
      }
      await sleep(100);
    }
  })();
  return mesh;
}

function dirBytes(path: string): number {
  let n = 0;
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

interface Summary {
  fetched: number;
  mesh: {
    refused: Record<string, number>;
    throttled: number;
    excluded: { stall: number; quota: number };
    heartbeatsRejected: Record<string, number>;
    handoff: Record<string, number>;
  };
}

/**
 * Waits for the three agents to finish (`--until-idle`, bounded) and checks
 * what every test checks; returns their summaries.
 */
async function finish(mesh: Mesh, t: { diagnostic(msg: string): void }, o: { allowInFlight?: boolean; withinMs?: number } = {}): Promise<Summary[]> {
  const { web, watch } = mesh;
  const deadline = deadlineAfter(o.withinMs ?? 90_000).then(() => 'timeout' as const);
  const results = await Promise.race([Promise.all(mesh.agents.map((a) => a.done)), deadline]);
  mesh.stopPolling();
  if (results === 'timeout') {
    for (const a of mesh.agents) a.proc.kill('SIGKILL');
    assert.fail(`the crawl did not end within ${(o.withinMs ?? 90_000) / 1000} s (fetched ${pageCounts(web).size} of ${mesh.expected.size})`);
  }
  for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
  const summaries = mesh.summaries.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Summary);
  const counts = pageCounts(web);
  assert.deepEqual([...mesh.expected].filter((u) => !counts.has(u)).slice(0, 5), [], 'every reachable page fetched');
  const twice = [...counts].filter(([, n]) => n > 1);
  if (o.allowInFlight) {
    // Hosts changing hands with every churning identity: at most the pages being fetched at a change.
    assert.ok(twice.length <= inFlightWindow(CONCURRENCY), `at most the in-flight window fetched twice (${twice.length})`);
    assert.deepEqual(twice.filter(([, n]) => n > 2).map(([u]) => `${u} ${whoFetched(web, u)}`), [], 'no page fetched three times');
  } else {
    if (twice.length) {
      assert.deepEqual(twice.slice(0, 4).map(([u]) => `${u} ${whoFetched(web, u)}`), [],
        `no page fetched twice (times in ms since the epoch; each agent's membership events follow)\n${membershipEvents(mesh.agents)}`);
    }
  }
  assert.deepEqual(watch.hits, [], 'nothing a hostile peer named was fetched');
  assert.deepEqual(web.requests().filter((r) => r.host.startsWith('evil')).map((r) => r.url), [], 'no request to a host the web does not serve');
  for (const i of [0, 1, 2]) {
    const bytes = dirBytes(join(mesh.dir, `a${i}`));
    assert.ok(bytes < MAX_DATA_DIR_BYTES, `a${i}'s data dir is bounded (${bytes} bytes)`);
  }
  assert.ok(mesh.maxMembers > 0 && mesh.maxMembers <= MAX_MEMBERS, `member tables stay bounded (at most ${mesh.maxMembers} members seen)`);
  t.diagnostic(`pages ${counts.size}/${mesh.expected.size}, fetched twice ${twice.length}, most members ${mesh.maxMembers}; refused ${JSON.stringify(summaries.map((s) => s.mesh.refused))}; `
    + `throttled ${summaries.map((s) => s.mesh.throttled)}; excluded ${JSON.stringify(summaries.map((s) => s.mesh.excluded))}; heartbeats rejected ${JSON.stringify(summaries.map((s) => s.mesh.heartbeatsRejected))}`);
  await mesh.close();
  return summaries;
}

const sum = (ss: Summary[], f: (s: Summary) => number | undefined) => ss.reduce((n, s) => n + (f(s) ?? 0), 0);

// ---------------------------------------------------------------- the hostile peer

/** The honest agents' ids and addresses, from their heartbeats (the hostile node listens on the topic). */
interface Honest { ids: string[]; addrs: Map<string, string[]> }

class Hostile {
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  readonly heard = new Map<string, string[]>();
  private messages = 0;

  private constructor(readonly node: MeshNode, private readonly port: number) {
    node.libp2p.services.pubsub.addEventListener('message', (evt: CustomEvent<Message>) => {
      this.messages++;
      if (evt.detail.topic !== TOPIC) return;
      const d = decodeHeartbeat(evt.detail.data);
      if (d.ok) this.heard.set(d.value.id, d.value.addrs);
    });
  }

  /** A fresh identity connected to the mesh through `port`, listening to heartbeats (not a member until it publishes). */
  static async start(port: number): Promise<Hostile> {
    const node = await createMeshNode({ dataDir: tempDir('ubicrawl-hostile-'), listen: ['/ip4/127.0.0.1/tcp/0'], gossip: { heartbeatInterval: 100 } });
    const h = new Hostile(node, port);
    if (process.env.HOSTILE_DEBUG) node.libp2p.addEventListener('connection:close', (e) => console.error('hostile: connection closed', e.detail.remotePeer.toString().slice(-8), e.detail.status));
    // A dial may fail (the honest agents can end their run while an identity is starting): the node must not
    // outlive it, or it keeps this file's process alive after its last test.
    await node.dialPeer(`127.0.0.1:${port}`).catch(async (err: unknown) => { await node.stop().catch(() => {}); throw err; });
    if (process.env.HOSTILE_DEBUG) console.error('hostile: dialed', port, node.libp2p.getConnections().length);
    node.libp2p.services.pubsub.subscribe(TOPIC);
    return h;
  }

  get id(): string { return this.node.id; }

  /** Waits until the three honest agents' heartbeats were heard, and connects to each. */
  async honest(): Promise<Honest> {
    const deadline = Date.now() + 15_000;
    while (this.heard.size < 3) {
      // A connection made while the agents were still settling may have been closed: dial again.
      if (this.node.libp2p.getConnections().length === 0) await this.node.dialPeer(`127.0.0.1:${this.port}`).catch(() => {});
      if (Date.now() > deadline) {
        throw new Error(`heard only ${this.heard.size} honest agents (${this.messages} messages; subscribers ${this.node.libp2p.services.pubsub.getSubscribers(TOPIC).length}; `
          + `connections ${this.node.libp2p.getConnections().length})`);
      }
      await sleep(50);
    }
    const ids = [...this.heard.keys()].sort();
    for (const id of ids) if (!this.node.isConnected(id)) await this.node.dialPeer(this.heard.get(id)!.find((a) => a.includes('/ip4/127.0.0.1/'))!);
    return { ids, addrs: new Map(this.heard) };
  }

  heartbeat(o: Partial<Heartbeat> = {}): Heartbeat {
    return {
      id: this.id, addrs: this.node.addrs(), capacity: 1, incarnation: 1, state: 'active',
      counters: { fetched: 0, queued: 0, sent: 0, received: 0 }, seq: ++this.seq, ...o,
    };
  }

  async publish(o: Partial<Heartbeat> = {}): Promise<void> {
    await this.node.libp2p.services.pubsub.publish(TOPIC, encodeHeartbeat(this.heartbeat(o))).catch(() => {});
  }

  /** Publishes a heartbeat every `everyMs`: a member as far as the others can tell. */
  join(o: Partial<Heartbeat> = {}, everyMs = HEARTBEAT): void {
    void this.publish(o);
    this.timer = setInterval(() => void this.publish(o), everyMs);
  }

  /** Answers URL streams: 'ack' acknowledges every batch (and keeps nothing), 'never' reads and never answers. */
  async serveUrls(mode: 'ack' | 'never'): Promise<void> {
    await this.node.libp2p.handle(PROTOCOL_URLS, ({ stream }) => {
      void (async () => {
        const acks: Uint8Array[] = [];
        let reading = true;
        // Ends with the inbound side: a generator polling an empty queue forever would keep the test file alive.
        const out = stream.sink((async function* () { while (reading) { while (acks.length) yield acks.shift()!; await sleep(5); } })()).catch(() => {});
        try {
          for await (const f of lp.decode(stream.source, { maxDataLength: 1 << 20 })) {
            if (mode === 'never') continue;
            const b = f.subarray();
            // Ack frame: type 2, version 1, the batchId (bytes 4+L .. 12+L of the batch), accepted, dropped.
            const fromLen = b[3]!;
            const ack = new Uint8Array(1 + 13);
            ack[0] = 13; ack[1] = 2; ack[2] = 1;
            ack.set(b.subarray(4 + fromLen, 12 + fromLen), 3);
            ack[11] = 0; ack[12] = 0;
            acks.push(ack.subarray(0, 13));
          }
        } catch { /* reset */ }
        reading = false;
        void out;
      })();
    }, { maxInboundStreams: 8 });
  }

  /** One stream: writes `frames`, returns the batch ids acknowledged and how the stream ended. */
  async send(to: string, frames: Uint8Array[], o: { readAcks?: number } = {}): Promise<{ acks: number[]; error: string | null; ms: number }> {
    const t0 = Date.now();
    const acks: number[] = [];
    let error: string | null = null;
    let stream;
    try {
      stream = await this.node.libp2p.dialProtocol(peerIdFromString(to), PROTOCOL_URLS, { signal: AbortSignal.timeout(5000) });
    } catch (e) {
      return { acks, error: (e as Error).name || 'dial', ms: Date.now() - t0 };
    }
    const writing = stream.sink((async function* () { for (const f of frames) yield f; if (o.readAcks) await deadlineAfter(60_000); })()).catch((e: Error) => { error ??= e.name; });
    try {
      for await (const f of lp.decode(stream.source)) {
        const a = decodeAck(f.subarray());
        if (a.ok) acks.push(a.value.batchId);
        if (o.readAcks && acks.length >= o.readAcks) break;
      }
    } catch (e) {
      error ??= (e as Error).name || 'error';
    }
    if (o.readAcks) stream.abort(new Error('done'));
    await Promise.race([writing, sleep(1000)]);
    return { acks, error, ms: Date.now() - t0 };
  }

  frame(batchId: number, items: UrlItem[]): Uint8Array {
    return encodeBatchFrame({ batchId, from: this.id, epoch: 99, flags: 0, items, seqs: items.map((_, i) => batchId * MAX_BATCH_URLS + i) });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.node.stop().catch(() => {});
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A deadline that does not keep the test file alive once everything else is done (agents stopped, servers closed). */
function deadlineAfter(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

/** URLs a hostile batch asks the agents to fetch: on the watched loopback server, and on hosts the web does not serve. */
function bait(watch: Watch, n: number, tag: string): UrlItem[] {
  const out: UrlItem[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ url: `http://watched.test:${watch.port}/${tag}/${i}`, depth: 0, hops: 0 });
  }
  return out;
}

/** Seen entries (plain and replica) for the web's root pages: accepted, they would hide the whole crawl. */
function forgedSeen(urls: string[]): UrlItem[] {
  return urls.flatMap((url) => [{ url, depth: 0, hops: SEEN_ONLY_FLAG }, { url, depth: 0, hops: REPLICA_SEEN_HOPS }]);
}

// ---------------------------------------------------------------- the tests

// Two cases share each of the next two meshes (three agents and a crawl each: a sixth of this file's CPU). Each
// case's hostile node is an identity of its own, and what each case asserts is counted apart from the other's: a
// stranger's streams are refused as they open, before a frame is read (src/mesh/exchange.ts `serve`), so (a)'s
// refusals are 'not-member' only, never (d)'s refusals of a member's items; a member claiming capacity 1e6 (b)
// opens no URL stream, and (f)'s nodes publish honest heartbeats or none. Every hostile node hears the honest
// agents before any of them publishes a heartbeat (Hostile.honest() counts whoever beats). (e) has a mesh of its
// own: whether its flood is throttled depends on how fast the agents take batches in (see there). On a mesh shared
// with (a), beside a core kept busy, it was in 1 of 4 runs (load 10–21); on its own, in 2 of 4 (load 11–25: it
// missed at 23–25), so no cause was shown, but the shared mesh was not kept.

test('(a) a peer that never joined: its URL batches and seen entries are refused unacknowledged and counted; (d) a member that never acknowledges is left out of the rings and its queue re-routed; its forged seen entries are refused', async (t) => {
  const mesh = await startMesh(['--peer-stall', String(PEER_STALL_D)]);
  const stranger = await Hostile.start(mesh.port);
  const evil = await Hostile.start(mesh.port);
  let running = true;
  let strangerSends: Promise<void> = Promise.resolve();
  try {
    const honest = await stranger.honest();
    await evil.honest();
    // (a) Seen entries for every page (would hide the crawl) and bait URLs.
    let strangerBatch = 1;
    const pages = [...mesh.expected];
    for (const to of honest.ids) {
      const r = await stranger.send(to, [stranger.frame(strangerBatch++, [...forgedSeen(pages.slice(0, 2000)), ...bait(mesh.watch, 20, 'a')])]);
      assert.deepEqual(r.acks, [], '(a) not acknowledged');
      assert.ok(r.error, '(a) the stream is reset');
    }
    void Promise.all(mesh.agents.map((a) => a.done)).then(() => { running = false; });
    // (d)
    await evil.serveUrls('never');
    evil.join();
    await sleep(4 * HEARTBEAT);
    // As a member: seen entries for roots of hosts it owns under no ring we know of — refused item by item (the batch is acked).
    const ring = new HostRing();
    for (const id of [...honest.ids, evil.id]) ring.add(id, 1);
    const notOurs = [...mesh.expected].filter((u) => ring.ownerOf(hostOf(u)!) !== evil.id).slice(0, 1500);
    let batch = 10;
    for (const to of honest.ids) {
      // Its handoff marker (for a ring of its own) first: it gets it into the honest agents' rings, where it owns hosts.
      const r = await evil.send(to, [evil.frame(1, [encodeHandoffMarker(1n)]), evil.frame(batch++, forgedSeen(notOurs))], { readAcks: 2 });
      assert.deepEqual(r.acks, [1, batch - 1], `(d) a member's batches are acknowledged (${r.error}, ${r.ms} ms)`);
    }
    // (a) And while it runs (after (d)'s batches, so that those are a member's alone).
    strangerSends = (async () => {
      let sends = 0;
      while (running && sends < 60) {
        for (const to of honest.ids) void stranger.send(to, [stranger.frame(strangerBatch++, [...forgedSeen(pages.slice(sends * 5, sends * 5 + 5)), ...bait(mesh.watch, 5, 'a2')])]);
        sends++;
        await sleep(100);
      }
    })();
    const ss = await finish(mesh, t);
    await strangerSends;
    for (const [i, s] of ss.entries()) assert.ok((s.mesh.refused['not-member'] ?? 0) >= 1, `(a) a${i} counted the refusals (${JSON.stringify(s.mesh.refused)})`);
    assert.ok(sum(ss, (s) => s.mesh.excluded.stall) >= 1, '(d) the member that acknowledges nothing was left out');
    assert.ok(sum(ss, (s) => s.mesh.refused['seen-not-owner']) >= notOurs.length, '(d) forged seen entries refused and counted');
    assert.ok(sum(ss, (s) => s.mesh.refused['replica-not-owner']) >= notOurs.length, '(d) forged replica entries refused and counted');
  } finally {
    running = false;
    await strangerSends;
    await stranger.stop();
    await evil.stop();
    await mesh.close();
  }
});

test('(b) a member that claims capacity 1e6 is refused; it takes no hosts and swallows no URLs; (f) garbage frames from members and strangers are refused and counted; nothing crashes', async (t) => {
  // (f) The crawl must outlast the garbage (a dozen streams to each agent, slow on a loaded machine): an agent that
  // ended its run acknowledges nothing. One host's pages answer slowly until the garbage is over.
  let holding = true;
  const mesh = await startMesh([], 10, (_host, path, hostIndex) => (holding && hostIndex === 0 && path !== '/robots.txt' ? 3000 : 0));
  const greedy = await Hostile.start(mesh.port);
  const stranger = await Hostile.start(mesh.port);
  const evil = await Hostile.start(mesh.port);
  try {
    const honest = await evil.honest();
    await stranger.honest();
    await greedy.honest();
    // (b)
    await greedy.serveUrls('ack'); // were it an owner, what it acks is lost
    greedy.join({ capacity: 1e6 });
    // (f)
    evil.join();
    await sleep(4 * HEARTBEAT);
    const good = evil.frame(1, [{ url: mesh.web.roots()[0]!, depth: 0, hops: 0 }]);
    // type, version, flags, from, batchId, epoch, then a run count of 2^31 − 1.
    const hugeCount = Uint8Array.from([1, 1, 0, evil.id.length, ...Buffer.from(evil.id, 'latin1'), ...new Uint8Array(8).fill(0), ...new Uint8Array(8).fill(0), 0xff, 0xff, 0xff, 0xff, 0x07]);
    const garbage: Array<[string, Uint8Array]> = [
      ['endless varint', new Uint8Array(12).fill(0xff)],
      ['oversize prefix', Uint8Array.from([0x81, 0x80, 0x80, 0x01, 1, 2, 3])],
      ['nonsense', Uint8Array.from([5, 9, 9, 9, 9, 9])],
      ['huge run count', Uint8Array.from([hugeCount.length, ...hugeCount])],
      ['truncated', good.subarray(0, good.length - 3)],
      ['random', Uint8Array.from({ length: 300 }, (_, i) => (i * 7919 + 13) & 0xff)],
    ];
    for (const to of honest.ids) {
      for (const [what, bytes] of garbage) {
        for (const who of [evil, stranger]) {
          const r = await who.send(to, [bytes]);
          assert.deepEqual(r.acks, [], `(f) ${what} from ${who === evil ? 'a member' : 'a stranger'}: not acknowledged`);
        }
      }
      // The agent still serves its member: like an honest sender, it retries a stream that was refused
      // (the agent takes 3 streams at a time per connection, and the garbage ones may not have closed yet).
      let ok = await evil.send(to, [evil.frame(7, [{ url: mesh.web.roots()[1]!, depth: 0, hops: 0 }])], { readAcks: 1 });
      for (let i = 0; i < 5 && ok.acks.length === 0; i++) {
        await sleep(200 * 2 ** i);
        ok = await evil.send(to, [evil.frame(7, [{ url: mesh.web.roots()[1]!, depth: 0, hops: 0 }])], { readAcks: 1 });
      }
      assert.deepEqual(ok.acks, [7], `(f) a good batch after the garbage is acknowledged (${ok.error})`);
    }
    holding = false;
    const ss = await finish(mesh, t);
    assert.ok(sum(ss, (s) => Object.values(s.mesh.heartbeatsRejected).reduce((a, b) => a + b, 0)) >= 3, '(b) its heartbeats are refused and counted');
    for (const reason of ['framing', 'oversize', 'type', 'count', 'truncated', 'not-member']) {
      assert.ok(sum(ss, (s) => s.mesh.refused[reason]) >= 1, `(f) ${reason} counted (${JSON.stringify(ss.map((s) => s.mesh.refused))})`);
    }
  } finally {
    await greedy.stop();
    await evil.stop();
    await stranger.stop();
    await mesh.close();
  }
});

test('(c) a new identity every second (each a member for a second) does not stall the crawl or grow the member table', async (t) => {
  // The run ends on three identical idle rounds. When a member's youth was measured by the clock, each churning
  // identity counted once older than dead-after + 2 heartbeats, through its silent tail until declared dead, and
  // changed them: the crawl, done, took 33 s to end, or did not within 60 s. Youth is now how long it was heard
  // (src/crawl/idle-members.ts): the churn never enters the idle rounds, and the run ends in about 10 s.
  const mesh = await startMesh();
  const churn: Hostile[] = [];
  let running = true;
  let churning: Promise<void> = Promise.resolve();
  const started = Date.now();
  try {
    const done = Promise.all(mesh.agents.map((a) => a.done)).finally(() => { running = false; });
    churning = (async () => {
      while (running && Date.now() - started < 60_000) {
        const h = await Hostile.start(mesh.port).catch(() => null);
        if (!h) break;
        churn.push(h);
        h.join({}, HEARTBEAT);
        await sleep(1000);
        await h.stop();
      }
    })();
    // They never send a handoff marker, so they never enter a ring: no host changes hands, nothing is fetched twice.
    const ss = await finish(mesh, t, { withinMs: 60_000 });
    await done;
    t.diagnostic(`identities: ${churn.length}; crawl took ${((Date.now() - started) / 1000).toFixed(1)} s; handoff ${JSON.stringify(ss.map((s) => s.mesh.handoff))}`);
    assert.ok(churn.length >= 3, 'several identities came and went during the crawl');
  } finally {
    running = false;
    // The churn loop may be starting one more identity: wait for it, so no node outlives the test (and the file).
    await churning;
    for (const h of churn) await h.stop();
    await mesh.close();
  }
});

test('(e) a member flooding heartbeats and batches is slowed down; the crawl goes on', async (t) => {
  const mesh = await startMesh(['--peer-rate', String(FLOOD_RATE)]);
  const evil = await Hostile.start(mesh.port);
  try {
    const honest = await evil.honest();
    evil.join({}, 5); // 200 heartbeats a second
    await sleep(4 * HEARTBEAT);
    // Batches of 100 of the web's own URLs (the crawl would find them anyway): 800 per agent against a
    // limit of 100 a second in bursts of 500. Each agent gets URLs of its own hosts: it takes them in at once
    // (no forwarding to their owners), so the bucket empties before it refills. The bucket refills a batch's
    // worth in a second: an agent that takes longer than that over a batch is never throttled, only slow, and
    // the limiter goes untested. With URLs it had to pass on, a loaded agent took a second or more a batch;
    // at 1,000 a second and batches of 1,000, so did one taking its own URLs beside a busy core (load 23-25).
    const urls = [...mesh.expected];
    const ring = new HostRing();
    for (const id of [...honest.ids, evil.id]) ring.add(id, 1);
    const ownedBy = (to: string) => { const mine = urls.filter((u) => ring.ownerOf(hostOf(u)!) === to); return mine.length ? mine : urls; };
    const its = (to: string, k: number) => { const mine = ownedBy(to); return Array.from({ length: FLOOD_RATE }, (_, i) => ({ url: mine[(k * FLOOD_RATE + i) % mine.length]!, depth: 1, hops: 0 })); };
    const floods = honest.ids.map((to, j) => evil.send(to, Array.from({ length: 8 }, (_, k) => evil.frame(j * 100 + k + 1, its(to, k))), { readAcks: 8 }));
    const res = await Promise.all(floods);
    const ss = await finish(mesh, t);
    for (const r of res) {
      assert.equal(r.acks.length, 8, `every flood batch is acknowledged in the end (${r.error})`);
      assert.ok(r.ms >= 2000, `but no faster than the limit allows (${r.ms} ms for 800 URLs at 100/s, burst 500)`);
    }
    // How many batches wait depends on how fast the agents take them (the bucket refills meanwhile): at least one.
    assert.ok(sum(ss, (s) => s.mesh.throttled) >= 1, 'the slowed batches are counted');
  } finally {
    await evil.stop();
    await mesh.close();
  }
});
