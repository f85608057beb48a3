// Hostile peers (docs/mesh.md "Admission"), shared by the test/hostile-peer-*.test.ts files: three honest
// agent processes crawl a synthetic web while a libp2p node on the agents' own stack, driven by the test,
// misbehaves. `finish` checks what every case checks: the crawl is complete, no page is fetched twice (beyond
// the in-flight window where ownership churns), nothing the hostile peer slipped in is fetched (a loopback
// server the test watches), disk and the member table stay bounded; each case then checks that its refusals
// are counted in the agents' summaries. One case (or two sharing a mesh) per file, so that the runner can
// run them beside other files (scripts/test.js) instead of one after the other.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as lp from 'it-length-prefixed';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Message } from '@libp2p/interface';
import { startSyntheticWeb, type SyntheticWeb } from '../bench/web/index.js';
import { createMeshNode, type MeshNode } from '../src/mesh/node.js';
import {
  PROTOCOL_URLS, SEEN_ONLY_FLAG, REPLICA_SEEN_HOPS, MAX_BATCH_URLS, decodeAck, decodeHeartbeat, encodeBatchFrame, encodeHeartbeat, membersTopic,
  type Heartbeat, type UrlItem,
} from '../src/mesh/wire.js';
import { inFlightWindow, tempDir } from './helpers.js';
import { CONCURRENCY, listeningOn, membershipEvents, pageCounts, seedThroughApi, startAgentProcess, waitMembers, whoFetched, type AgentProc } from './mesh-agents.js';

/**
 * Membership timing of the honest agents. Four test files at once on 2 cores delay an honest agent's heartbeats
 * and acknowledgements by seconds: at --dead-after 1000 and --peer-stall 3000, honest members were left out of
 * each other's rings for a stall of 3.0–3.6 s (50 times in 3 parallel runs of this file at a load average of
 * 10–20), their hosts moved, and pages were fetched twice; at a load of 34–44, 9 live members were declared dead too.
 */
export const HEARTBEAT = 500;
export const DEAD_AFTER = 3000;
/** Only (d) needs the stall rule to fire, on the member that acknowledges nothing: the others never stall this long. */
export const PEER_STALL = 30_000;
/** (d): the stall rule on a member that never acknowledges; an honest agent's acknowledgements lag less than this under load. */
export const PEER_STALL_D = 10_000;
/** (e): the flood's limit, URLs a second per sender, and the size of each of its 8 batches. */
export const FLOOD_RATE = 100;
const TOPIC = membersTopic('default');
/** Disk per honest agent (WARCs of ≈ 500 pages of ≤ 3 KB, LevelDB, outbox): far below this. */
const MAX_DATA_DIR_BYTES = 64 << 20;
/** Members an honest agent may list: 3 honest + the hostile identities alive at once (churn: about 3). */
const MAX_MEMBERS = 10;

// ---------------------------------------------------------------- the honest mesh

export interface Watch { server: Server; port: number; hits: string[] }

/** A loopback server the crawl must never reach: hostile batches name URLs on it. */
async function startWatch(): Promise<Watch> {
  const hits: string[] = [];
  const server = createServer((req, res) => { hits.push(`${req.headers.host}${req.url}`); res.end('secret'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

export interface Mesh {
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

/**
 * Three agents on loopback, all members of each other's ring, then the crawl
 * is seeded (before anything else: an `--until-idle` mesh that formed and has
 * exchanged its handoff markers, but has no seeds, is idle and ends).
 * `webSeed`: the synthetic web's seed (each case its own web). `pagesPerHost`: 10, so that the crawl outlasts what the test does meanwhile (a churn of identities, a
 * stall deadline, a rate-limited flood, garbage frames sent one after the other).
 */
export async function startMesh(webSeed: number, extra: string[] = [], pagesPerHost = 10, latencyMs?: (host: string, path: string, hostIndex: number) => number): Promise<Mesh> {
  const web = await startSyntheticWeb({ seed: webSeed, hosts: 50, pagesPerHost, outLinks: 6, crossHostShare: 0.3, pageBytes: { min: 1000, max: 2500 }, latencyMs });
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

export interface Summary {
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
export async function finish(mesh: Mesh, t: { diagnostic(msg: string): void }, o: { allowInFlight?: boolean; withinMs?: number } = {}): Promise<Summary[]> {
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

export const sum = (ss: Summary[], f: (s: Summary) => number | undefined) => ss.reduce((n, s) => n + (f(s) ?? 0), 0);

// ---------------------------------------------------------------- the hostile peer

/** The honest agents' ids and addresses, from their heartbeats (the hostile node listens on the topic). */
export interface Honest { ids: string[]; addrs: Map<string, string[]> }

export class Hostile {
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

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A deadline that does not keep the test file alive once everything else is done (agents stopped, servers closed). */
export function deadlineAfter(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

/** URLs a hostile batch asks the agents to fetch: on the watched loopback server, and on hosts the web does not serve. */
export function bait(watch: Watch, n: number, tag: string): UrlItem[] {
  const out: UrlItem[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ url: `http://watched.test:${watch.port}/${tag}/${i}`, depth: 0, hops: 0 });
  }
  return out;
}

/** Seen entries (plain and replica) for the web's root pages: accepted, they would hide the whole crawl. */
export function forgedSeen(urls: string[]): UrlItem[] {
  return urls.flatMap((url) => [{ url, depth: 0, hops: SEEN_ONLY_FLAG }, { url, depth: 0, hops: REPLICA_SEEN_HOPS }]);
}
