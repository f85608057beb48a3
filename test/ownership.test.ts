// The ownership component (src/crawl/ownership.ts) built alone: a real store on a
// temp dir, a real frontier, DRUM seen-set and handoff gate, a fake mesh node
// that records what would be forwarded. docs/mesh.md "Admission: URL batches,
// seen entries, handoffs" and "Handoff protocol".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, type Store } from '../src/store/db.js';
import { SyncBarrier } from '../src/store/sync-barrier.js';
import { hostKey, prefixEnd, seenKey } from '../src/store/keys.js';
import { defaultConfig } from '../src/config.js';
import { Drum } from '../src/seen/drum.js';
import { queuedValue, seenStateOf } from '../src/seen/state.js';
import { Frontier, type NewUrl, type UrlKind } from '../src/frontier/frontier.js';
import { HostRing } from '../src/assign/ring.js';
import { HandoffGate, ringIdOf, snapshotRing } from '../src/crawl/handoff.js';
import { Ownership, HANDOFF_CHUNK, type OwnershipComponents, type OwnershipMesh, type OwnedHostData } from '../src/crawl/ownership.js';
import { Promotions } from '../src/crawl/promotions.js';
import type { Candidate, HostData } from '../src/crawl/candidate.js';
import { encodeFetchRecord, decodeFetchRecord } from '../src/crawl/records.js';
import { createMetrics } from '../src/api/metrics.js';
import { classifyItem, encodeHandoffMarker, encodeItem, type MemberInfo, type UrlItem } from '../src/mesh/index.js';
import { normalizeUrl, hostOf } from '../src/url/normalize.js';
import { silentLogger } from '../src/util/log.js';
import { tempDir, waitUntil } from './helpers.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'; // self
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';
const D = '12D3KooWDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD'; // never a member
const E = '12D3KooWEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE';

interface Cand extends NewUrl { key: Buffer; inlink?: boolean; grant?: string }

function member(id: string, state: MemberInfo['state'] = 'active'): MemberInfo {
  return {
    id, incarnation: 1, state, capacity: 1, addrs: [], seq: 1,
    counters: { fetched: 0, queued: 0, sent: 0, received: 0 }, lastHeard: Date.now(), self: id === A,
  };
}

/** A mesh node as ownership sees it: a ring, a member table, and an outbox that records what is forwarded. */
class FakeMesh implements OwnershipMesh {
  readonly id = A;
  readonly stats = { excluded: { stall: 0, quota: 0 }, forgotten: 0 };
  readonly forwarded: { owner: string; items: UrlItem[]; handoff: boolean }[] = [];
  readonly table = new Map<string, MemberInfo>([[A, member(A)]]);
  readonly vouched = new Set<string>();
  readonly ring = new HostRing({ replicas: 64 });
  readonly membership = {
    ring: this.ring,
    stats: { rejected: {} as Record<string, number> },
    member: (id: string) => this.table.get(id),
    isVouched: (id: string) => this.vouched.has(id),
    isExcluded: () => false,
    vouch: (id: string) => { this.vouched.add(id); },
    on: () => this.membership,
  };
  readonly outbox = {
    forgetRecent: () => {}, queued: () => 0, isPaused: () => false, peers: () => [],
    reassign: async () => ({ moved: 0, local: 0, kept: 0 }),
  };
  readonly replicas = { queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({ moved: 0, local: 0, kept: 0 }) };
  readonly exchange = {
    inboxPeers: async () => [],
    stats: () => ({ sent: 0, acked: 0, received: 0, duplicates: 0, rejected: {}, acceptErrors: 0, failures: 0, throttled: 0, peers: new Map() }),
  };
  constructor() { this.ring.add(A); }
  ownerOf(host: string): string { return this.ring.ownerOf(host) ?? A; }
  members(): MemberInfo[] { return [...this.table.values()]; }
  async forward(owner: string, items: UrlItem[], handoff = false): Promise<number> {
    this.forwarded.push({ owner, items, handoff });
    return items.length;
  }
  sentTo(owner: string): UrlItem[] { return this.forwarded.filter((f) => f.owner === owner).flatMap((f) => f.items); }
}

interface Rig {
  store: Store;
  frontier: Frontier<OwnedHostData>;
  drum: Drum<Cand>;
  gate: HandoffGate;
  mesh: FakeMesh;
  ownership: Ownership<Cand, OwnedHostData>;
  pumps: number;
  close(): Promise<void>;
}

function candidate(raw: string, depth: number, kind: UrlKind): Cand | null {
  const url = normalizeUrl(raw);
  if (!url) return null;
  const host = hostOf(url);
  const hk = hostKey(host);
  return { host, hostKey: hk, url, depth, hops: 0, kind, key: seenKey(hk, url) };
}

async function rig(extra: Partial<OwnershipComponents<Cand, OwnedHostData>> = {}, dir = tempDir('ubicrawl-ownership-')): Promise<Rig> {
  const store = await openStore(dir);
  const frontier = new Frontier<OwnedHostData>(store.frontier, store.hosts, store.meta, {
    maxActiveHosts: 4, headSize: 8, createData: () => ({ pendingAcks: 0, checkSeen: false }),
  });
  await frontier.recover();
  const drum = new Drum<Cand>(store.db, store.seen, {
    batchSize: 1000, maxWaitMs: 5,
    valueOf: (it) => queuedValue(it.frontierKey),
    onNew: (items) => frontier.enqueueOps(items),
    afterCommit: (items) => frontier.committed(items),
  });
  const gate = new HandoffGate('', { timeoutMs: 60_000, floorMs: 0 });
  const config = defaultConfig();
  config.mesh.enabled = true;
  const r = { store, frontier, drum, gate, mesh: new FakeMesh(), pumps: 0 } as Rig;
  r.ownership = new Ownership<Cand, OwnedHostData>({
    config, store, frontier, drum, barrier: new SyncBarrier(store.meta), gate, log: silentLogger, metrics: createMetrics(),
    candidate,
    followsFromPeer: () => true,
    // Standalone routing: every URL is ours.
    route: (cands, sync) => drum.submit(cands, sync),
    attachGrants: async () => {},
    schedulePump: () => { r.pumps++; },
    lifecycle: () => 'active',
    ...extra,
  });
  r.close = async () => { r.ownership.stop(); await r.ownership.rebalancing; await r.ownership.saved(); await store.close(); };
  return r;
}

/** Hosts by owner under a ring of A and B. */
function hostsByOwner(n: number): { a: string[]; b: string[] } {
  const ring = new HostRing({ replicas: 64 });
  ring.add(A); ring.add(B);
  const a: string[] = [];
  const b: string[] = [];
  for (let i = 0; a.length < n || b.length < n; i++) {
    const h = `h${i}.example`;
    (ring.ownerOf(h) === A ? a : b).push(h);
  }
  return { a: a.slice(0, n), b: b.slice(0, n) };
}

test('ownership: batches only from members; a seen entry from a member that never owned the host is refused and counted, the owner\'s is stored as settled elsewhere', async () => {
  const r = await rig();
  try {
    r.mesh.ring.add(B);
    r.mesh.table.set(B, member(B));
    r.mesh.table.set(C, member(C, 'leaving')); // a member, but it owns nothing in any ring we had
    await r.ownership.start(r.mesh);
    const { a } = hostsByOwner(2);
    const fromOwner = `http://${a[0]}/settled`;
    const fromStranger = `http://${a[1]}/hidden`;

    await assert.rejects(r.ownership.acceptFromPeer([encodeItem({ kind: 'crawl', url: `http://${a[0]}/x`, depth: 0, hops: 0, sitemap: false })], D), /not a member/);
    assert.equal(r.ownership.refusals()['not-member'], 1);

    // B owns a[0] in the ring without us (the mesh before we joined): docs/mesh.md "Admission".
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: fromOwner, hops: 0 })], B);
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: fromStranger, hops: 0 }), encodeItem({ kind: 'crawl', url: `http://${a[1]}/page`, depth: 1, hops: 1, sitemap: false })], C);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'one refusal, counted by reason');
    assert.equal(r.ownership.received, 3, 'every item taken from a member is counted');

    const stored = await r.store.seen.get(seenKey(hostKey(a[0]!), fromOwner));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere');
    const record = await r.store.fetches.get(seenKey(hostKey(a[0]!), fromOwner));
    assert.equal(record && decodeFetchRecord(record)?.failure, 'settled-elsewhere');
    assert.equal(await r.store.seen.get(seenKey(hostKey(a[1]!), fromStranger)), undefined, 'the refused entry hides nothing');
    // The stranger's URL to crawl is accepted all the same (URLs come from any member).
    assert.ok(await waitUntil(() => r.frontier.host(a[1]!) !== undefined, 2000), 'its crawl URL reached the frontier');
    assert.ok(r.mesh.forwarded.every((f) => classifyItem(f.items[0]!).kind === 'marker'), 'nothing but markers went out');
  } finally { await r.close(); }
});

test('ownership: a marker for our ring vouches its sender, lets it out of the gate and wakes the scheduler', async () => {
  const r = await rig();
  try {
    r.mesh.ring.add(B);
    r.mesh.vouched.add(B);
    r.mesh.table.set(B, member(B));
    r.mesh.table.set(C, member(C)); // joining: not in our ring yet
    await r.ownership.start(r.mesh);
    assert.deepEqual(r.gate.waitingFor().sort(), [B, C], 'members known at start are waited for');
    const pumps = r.pumps;
    await r.ownership.acceptFromPeer([encodeHandoffMarker(r.gate.ringId)], C);
    assert.ok(r.mesh.vouched.has(C), 'its first marker lets it into our ring');
    assert.deepEqual(r.gate.waitingFor(), [B]);
    assert.ok(r.pumps > pumps, 'hosts it held may be crawled now');
    // Our own markers went to both (joiners too), after the start's handoff pass.
    await r.ownership.rebalancing;
    for (const p of [B, C]) {
      const markers = r.mesh.sentTo(p).map(classifyItem).filter((w) => w.kind === 'marker');
      assert.deepEqual(markers.map((w) => w.kind === 'marker' && w.ringId), [r.gate.ringId], `one marker for ${p.slice(-4)}`);
    }
  } finally { await r.close(); }
});

test('ownership: on a ring change the hosts that move are handed to their new owner with their seen entries, then deleted here (frontier and seen-set); a marker follows', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh); // alone: every host is ours
    await r.ownership.rebalancing;
    const { a, b } = hostsByOwner(3);
    const cands = [...a, ...b].flatMap((h) => [candidate(`http://${h}/1`, 1, 'page')!, candidate(`http://${h}/2`, 1, 'sitemap')!]);
    await r.drum.submit(cands, false);
    // A page of b[0] fetched before the change: its fetch record is what the new owner must learn.
    const fetched = `http://${b[0]}/done`;
    await r.store.fetches.put(seenKey(hostKey(b[0]!), fetched), encodeFetchRecord({ url: fetched, at: 1, status: 200 }));
    for (const h of [...a, ...b]) assert.ok(r.frontier.host(h), `${h} queued here`);

    // B joins (its marker came): the hosts it owns now move to it.
    r.mesh.ring.add(B);
    r.mesh.vouched.add(B);
    r.mesh.table.set(B, member(B));
    r.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
    await r.ownership.rebalancing;

    const sent = r.mesh.sentTo(B).map(classifyItem);
    const crawl = sent.filter((w) => w.kind === 'crawl').map((w) => w.kind === 'crawl' && `${w.url}${w.sitemap ? ' sitemap' : ''}`).sort();
    assert.deepEqual(crawl, b.flatMap((h) => [`http://${h}/1`, `http://${h}/2 sitemap`]).sort(), 'every queued URL of the moved hosts, and only theirs');
    assert.ok(sent.some((w) => w.kind === 'seen' && w.url === fetched), 'the fetched page as a seen entry');
    assert.equal(sent.at(-1)?.kind, 'marker', 'the marker comes after everything handed over');
    assert.ok(r.mesh.forwarded.every((f) => f.handoff), 'handoffs bypass the recently-forwarded cache');
    assert.equal(r.ownership.handedOver, 6);

    for (const h of b) {
      assert.equal(r.frontier.host(h), undefined, `${h} forgotten`);
      const hk = hostKey(h);
      assert.equal((await r.store.frontier.keys({ gte: hk, lt: prefixEnd(hk) }).all()).length, 0, `${h}: no frontier entry left`);
      assert.equal(await r.store.seen.get(seenKey(hk, `http://${h}/1`)), undefined, `${h}: its queued URLs are not "seen" here any more`);
    }
    for (const h of a) {
      assert.ok(r.frontier.host(h), `${h} stays`);
      assert.ok(await r.store.seen.get(seenKey(hostKey(h), `http://${h}/1`)), `${h}: seen entries kept`);
    }
    assert.equal(r.ownership.rebalancePending, false);
  } finally { await r.close(); }
});

test('ownership: many hosts that move are handed over in a few exclusive sections of the seen-set, not one per host, every URL once, and each host\'s state before its URLs', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh); // alone: every host is ours
    await r.ownership.rebalancing;
    const n = HANDOFF_CHUNK + 44; // more than one chunk moves
    const { a, b } = hostsByOwner(n);
    await r.drum.submit([...a, ...b].flatMap((h) => [candidate(`http://${h}/1`, 1, 'page')!, candidate(`http://${h}/2`, 1, 'page')!]), false);
    await waitUntil(() => [...b].every((h) => r.frontier.host(h)), 5000);
    let sections = 0;
    const exclusive = r.drum.exclusive.bind(r.drum);
    r.drum.exclusive = (fn) => { sections++; return exclusive(fn); };

    r.mesh.ring.add(B);
    r.mesh.vouched.add(B);
    r.mesh.table.set(B, member(B));
    r.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
    await r.ownership.rebalancing;

    const crawl = r.mesh.sentTo(B).map(classifyItem).filter((w) => w.kind === 'crawl').map((w) => w.kind === 'crawl' && w.url).sort();
    assert.deepEqual(crawl, b.flatMap((h) => [`http://${h}/1`, `http://${h}/2`]).sort(), 'every queued URL of the moved hosts once, and only theirs');
    assert.equal(r.ownership.handedOver, 2 * n);
    assert.ok(sections <= Math.ceil(n / HANDOFF_CHUNK), `${n} hosts handed over in ${sections} exclusive sections (at most ${Math.ceil(n / HANDOFF_CHUNK)})`);
    for (const h of b) assert.equal(r.frontier.host(h), undefined, `${h} forgotten`);
    for (const h of a) assert.ok(r.frontier.host(h), `${h} stays`);
  } finally { await r.close(); }
});

// docs/storage.md "In-link promotions", in a mesh: a promotion and a handoff of the same host run in
// the same exclusive section of the seen-set, and a host that moves is paused before either runs.
test('ownership and promotions: a host promoted before it moves, and one whose promotions race the move, are each handed over once, and nothing of them stays queued here', async () => {
  const r = await rig();
  const stats = { inlinks: { crossings: 0, promoted: 0, skipped: 0 } };
  const fatal: Error[] = [];
  const promotions = new Promotions({
    store: r.store, frontier: r.frontier as unknown as Frontier<HostData>, drum: r.drum as unknown as Drum<Candidate>, stats,
    onFatal: (err) => fatal.push(err), stopping: () => false,
  });
  try {
    await r.ownership.start(r.mesh); // alone: every host is ours
    await r.ownership.rebalancing;
    const { b } = hostsByOwner(2);
    const urlsOf = (h: string) => Array.from({ length: 12 }, (_, i) => `http://${h}/p${i}`);
    const linksTo = (h: string) => urlsOf(h).map((u) => ({ ...candidate(u, 3, 'page')!, inlink: true }));
    await r.drum.submit([...linksTo(b[0]!), ...linksTo(b[1]!)], false);
    // Three pages link to each URL (inlinkBonus: a crossing at 3). b[0]'s are promoted while it is ours.
    for (let i = 0; i < 3; i++) promotions.noteRepeats(linksTo(b[0]!));
    await promotions.running;
    assert.equal(stats.inlinks.promoted, 12, JSON.stringify(stats.inlinks));
    // b[1]'s cross now, and in the same tick B joins: both hosts move to it.
    for (let i = 0; i < 2; i++) promotions.noteRepeats(linksTo(b[1]!));
    promotions.noteRepeats(linksTo(b[1]!));
    r.mesh.ring.add(B);
    r.mesh.vouched.add(B);
    r.mesh.table.set(B, member(B));
    r.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
    await Promise.all([promotions.running, r.ownership.rebalancing]);
    await r.ownership.rebalancing;

    assert.equal(stats.inlinks.crossings, 24);
    assert.equal(stats.inlinks.promoted + stats.inlinks.skipped, 24, JSON.stringify(stats.inlinks));
    const crawl = r.mesh.sentTo(B).map(classifyItem).flatMap((w) => (w.kind === 'crawl' ? [w.url] : [])).sort();
    assert.deepEqual(crawl, [...urlsOf(b[0]!), ...urlsOf(b[1]!)].map((u) => normalizeUrl(u)!).sort(), 'every URL of both hosts handed over, each once');
    for (const h of b) {
      const hk = hostKey(h);
      assert.equal(r.frontier.host(h), undefined, `${h} forgotten`);
      assert.equal((await r.store.frontier.keys({ gte: hk, lt: prefixEnd(hk) }).all()).length, 0, `${h}: no frontier entry left, promoted or not`);
      assert.equal((await r.store.seen.keys({ gte: hk, lt: prefixEnd(hk) }).all()).length, 0, `${h}: no seen value left to promote or deduplicate against`);
    }
    assert.equal(r.frontier.queued, 0);
    assert.deepEqual(fatal, []);
  } finally { await promotions.running; await r.close(); }
});

/** Hosts by owner under rings of A, B and C and of A and B (C gone). */
function hostsMovedFromC(n: number): { gained: string[]; always: string[] } {
  const full = new HostRing({ replicas: 64 });
  full.add(A); full.add(B); full.add(C);
  const left = new HostRing({ replicas: 64 });
  left.add(A); left.add(B);
  const gained: string[] = [];
  const always: string[] = [];
  for (let i = 0; gained.length < n || always.length < n; i++) {
    const h = `h${i}.example`;
    if (full.ownerOf(h) === C && left.ownerOf(h) === A) gained.push(h);
    else if (full.ownerOf(h) === A) always.push(h);
  }
  return { gained: gained.slice(0, n), always: always.slice(0, n) };
}

/** B and C enter A's ring (members, their markers came), and the rebalance that follows is done. */
/** B enters our ring (vouched, its marker came). */
async function bJoins(r: Rig): Promise<void> {
  r.mesh.ring.add(B); r.mesh.vouched.add(B); r.mesh.table.set(B, member(B));
  r.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
  await r.ownership.rebalancing;
}

async function bAndCJoin(r: Rig): Promise<void> {
  for (const id of [B, C]) { r.mesh.ring.add(id); r.mesh.vouched.add(id); r.mesh.table.set(id, member(id)); }
  r.ownership.onMembershipChange({ members: [A, B, C], added: [B, C], removed: [], dead: [] });
  await r.ownership.rebalancing;
}

/** A starts with no other member: its start-up ends at once. */
async function startAlone(r: Rig): Promise<void> {
  await r.ownership.start(r.mesh);
  await r.ownership.rebalancing;
  assert.equal(r.gate.startingUp, false);
}

/** A, alone, then B and C enter its ring (their markers came), then C leaves. */
async function ringHistory(r: Rig): Promise<void> {
  await startAlone(r);
  await bAndCJoin(r);
  r.mesh.ring.remove(C);
  r.mesh.table.delete(C);
  r.ownership.onMembershipChange({ members: [A, B], added: [], removed: [C], dead: [] });
  await r.ownership.rebalancing;
}

// The join/leave test (test/mesh-crawl.test.ts) fetched pages twice when a leaver that had not
// counted the newcomer in yet handed hosts to the member that owns them without the newcomer,
// which passed their seen entries on to the newcomer: refused there (`seen-not-owner`), the pages
// were fetched again. docs/mesh.md "Admission".
test('ownership: a seen entry passed on by the member that had a host we just gained (its previous owner had not counted us in) is kept; for a host ours all along it is refused', async () => {
  const r = await rig();
  try {
    await ringHistory(r);
    const { gained, always } = hostsMovedFromC(2);
    const page = `http://${gained[0]}/fetched-by-c`;
    await r.drum.submit([candidate(page, 1, 'page')!], false); // queued here too (a link to it)
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: page, hops: 1 })], B);
    const stored = await r.store.seen.get(seenKey(hostKey(gained[0]!), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'the page is settled: the host turn will not fetch it again');
    assert.equal(r.frontier.host(gained[0]!)?.data.checkSeen, true, 'its queued URLs are checked against the seen-set before a fetch');
    assert.equal(r.ownership.refusals()['seen-not-owner'], undefined);

    // B may not hide pages of a host that has been ours all along, relayed or not.
    const forged = [`http://${always[0]}/hidden`, `http://${always[1]}/hidden`];
    await r.ownership.acceptFromPeer([
      encodeItem({ kind: 'seen', url: forged[0]!, hops: 1 }), encodeItem({ kind: 'seen', url: forged[1]!, hops: 0 }),
    ], B);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 2);
    for (const u of forged) assert.equal(await r.store.seen.get(seenKey(hostKey(hostOf(u)), u)), undefined, `${u} hides nothing`);
    // A gained host first-hand: its owner C is gone and B came after it (a holder of its replicas), so taken.
    const firstHand = `http://${gained[1]}/first-hand`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: firstHand, hops: 0 })], B);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 2);
    assert.ok(await r.store.seen.get(seenKey(hostKey(gained[1]!), firstHand)));
  } finally { await r.close(); }
});

// A receiver whose view lags its sender's passes a handed-over seen entry on; the sender's marker may
// reach it first, and its gate opened on the host with the entry gone: the page was fetched again.
test('ownership: a seen entry passed on (not ours by our view) is kept here too: when the host turns out ours, its page is settled', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bJoins(r);
    // B leaves and hands its host to us; we have not seen its leave yet, so by our view the host is B's.
    const { b } = hostsByOwner(1);
    const page = `http://${b[0]}/fetched-by-b`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: page, hops: 0 })], B);
    const passed = r.mesh.sentTo(B).map(classifyItem).filter((w) => w.kind === 'seen');
    assert.deepEqual(passed.map((w) => w.kind === 'seen' && `${w.url} ${w.hops}`), [`${page} 1`], 'passed on to the owner by our view, one hop more');
    // Our view catches up: the host is ours, and its page was fetched by B.
    r.mesh.ring.remove(B);
    r.ownership.onMembershipChange({ members: [A], added: [], removed: [B], dead: [] });
    await r.ownership.rebalancing;
    assert.equal(r.mesh.ownerOf(b[0]!), A);
    const stored = await r.store.seen.get(seenKey(hostKey(b[0]!), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'the page is settled here: not fetched a second time');
    assert.equal(r.ownership.refusals()['seen-not-owner'], undefined);
  } finally { await r.close(); }
});

// The join/leave test under load (a CPU burner beside it): the leaver's marker for the ring of the
// join, 85 s late on its stream, came after the leaver was seen leaving; taken as its final marker
// it opened the gate on the leaver's hosts 2.5 s before their seen entries came, and two pages were
// fetched twice. docs/mesh.md "Handoff protocol".
test('ownership: a leaver\'s late marker for a ring it still owned hosts in does not open the gate on its hosts; its marker for our ring does', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bAndCJoin(r);
    const withC = snapshotRing(r.mesh.ring);
    for (const id of [B, C]) await r.ownership.acceptFromPeer([encodeHandoffMarker(ringIdOf(withC))], id);
    assert.deepEqual(r.gate.waitingFor(), []);
    // C leaves: its hosts come to us and B; we wait for C's marker for our new ring.
    r.mesh.table.set(C, member(C, 'leaving'));
    r.mesh.ring.remove(C);
    r.ownership.onMembershipChange({ members: [A, B], added: [], removed: [], dead: [] });
    await r.ownership.rebalancing;
    const { gained } = hostsMovedFromC(1);
    const now = Date.now();
    assert.ok(r.gate.notBefore(gained[0]!, now) > now, 'the host gained from C waits');
    // C's marker for the ring it still owned hosts in, late behind its stream: not its last word.
    await r.ownership.acceptFromPeer([encodeHandoffMarker(ringIdOf(withC))], C);
    const ours = ringIdOf(snapshotRing(r.mesh.ring));
    await r.ownership.acceptFromPeer([encodeHandoffMarker(ours)], B);
    const later = Date.now();
    assert.ok(r.gate.notBefore(gained[0]!, later) > later, 'still waiting for C\'s handoff');
    assert.deepEqual(r.gate.waitingFor(), [C]);
    // Its marker for our ring (after its seen entries) opens the gate, and holds for later rings.
    await r.ownership.acceptFromPeer([encodeHandoffMarker(ours)], C);
    assert.deepEqual(r.gate.waitingFor(), []);
    assert.equal(r.gate.notBefore(gained[0]!, Date.now()), 0);
  } finally { await r.close(); }
});

// The join/leave test under load: the newcomer heard of a member only after its start-up had ended, and
// refused that member's handoff (`seen-not-owner`): it had never had a ring where the member owned those
// hosts — the member held them under the ring without the newcomer — and fetched the pages again.
test('ownership: a member heard of after our start-up hands over the hosts it held without us: its seen entries are kept until its first marker for our ring', async () => {
  const r = await rig();
  try {
    await startAlone(r);
    // B appears, in the mesh before us (more heartbeats sent): in the ring A and B every host is either ours (B next) or B's.
    r.mesh.ring.add(B); r.mesh.vouched.add(B); r.mesh.table.set(B, { ...member(B), seq: 400 });
    r.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
    await r.ownership.rebalancing;
    assert.deepEqual(r.gate.waitingFor(), [B], 'B may hold our hosts: waited for');
    const { a } = hostsByOwner(2);
    const page = `http://${a[0]}/fetched-by-b`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: page, hops: 0 })], B);
    const stored = await r.store.seen.get(seenKey(hostKey(a[0]!), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'B held the host before it counted us: its page is not fetched again');
    assert.equal(r.ownership.refusals()['seen-not-owner'], undefined);
    // Once B has handed us our hosts (its marker for our ring), it owns none of ours in any ring we had.
    await r.ownership.acceptFromPeer([encodeHandoffMarker(r.gate.ringId)], B);
    assert.deepEqual(r.gate.waitingFor(), []);
    const late = `http://${a[1]}/hidden`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: late, hops: 0 })], B);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'after its handoff, refused');
    assert.equal(await r.store.seen.get(seenKey(hostKey(a[1]!), late)), undefined);
  } finally { await r.close(); }
});

// Three agents started together (bench/mesh-cpu.ts): the first member crawled alone for a second, then counted
// the two joiners in at once and handed each host straight to its owner under the ring of three. A joiner for
// which the sender was not the owner "without us" (that was the other joiner, which never held the host)
// refused the entries, and fetched the mesh's first pages again (≈ 50 of 10,200). docs/mesh.md "Admission".
test('ownership: a member of the mesh before us may hand us any host of ours in its first handoff; one that came after us, or after its first handoff, may not', async () => {
  const config = defaultConfig();
  config.mesh.enabled = true;
  config.mesh.peers = ['127.0.0.1:4001']; // a joiner: start-up holds until a member is in our ring
  const r = await rig({ config });
  try {
    // B was in the mesh when we joined; C joined with us. Under the ring of three, hosts ours whose next owner
    // is C: B never owned them in a ring we had, nor without us — it held them under a ring of its own, alone.
    for (const id of [B, C]) { r.mesh.ring.add(id); r.mesh.table.set(id, member(id)); }
    const three = new HostRing({ replicas: 64 });
    three.add(A); three.add(B); three.add(C);
    const ours: string[] = [];
    for (let i = 0; ours.length < 2; i++) {
      const h = `h${i}.example`;
      const [owner, next] = three.nextOwnersOf(h, 2);
      if (owner === A && next === C) ours.push(h);
    }
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    assert.ok(r.gate.waitingFor().includes(B), 'B may hold our hosts: waited for');
    const early = `http://${ours[0]}/fetched-by-b-alone`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: early, hops: 0 })], B);
    const stored = await r.store.seen.get(seenKey(hostKey(ours[0]!), early));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'the page B fetched before we joined is not fetched again');
    assert.equal(r.ownership.refusals()['seen-not-owner'], undefined);

    // D came after us: it held none of our hosts, and gets no such credit.
    r.mesh.ring.add(D); r.mesh.vouched.add(D); r.mesh.table.set(D, member(D));
    r.ownership.onMembershipChange({ members: [A, B, C, D], added: [D], removed: [], dead: [] });
    await r.ownership.rebalancing;
    const withD = new HostRing({ replicas: 64 });
    withD.add(A); withD.add(B); withD.add(C); withD.add(D);
    let byD = '';
    for (let i = 0; !byD; i++) if (withD.ownerOf(`d${i}.example`) === A && withD.nextOwnersOf(`d${i}.example`, 2)[1] !== D) byD = `d${i}.example`;
    const forged = `http://${byD}/hidden-by-d`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: forged, hops: 0 })], D);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'a member that came after us is refused');
    assert.equal(await r.store.seen.get(seenKey(hostKey(byD), forged)), undefined);

    // Once B has handed us our hosts (its marker for our ring), it may no longer hide pages of ours.
    await r.ownership.acceptFromPeer([encodeHandoffMarker(r.gate.ringId)], B);
    const late = `http://${ours[1]}/hidden-later`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: late, hops: 0 })], B);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 2, 'after its first handoff, refused');
    assert.equal(await r.store.seen.get(seenKey(hostKey(ours[1]!), late)), undefined);
  } finally { await r.close(); }
});

/** What ownership asks of the replicated frontier (src/crawl/frontier-replica.ts), recorded. */
function fakeStandby() {
  const calls = { seenOps: [] as string[][], passes: 0 };
  return {
    calls,
    standby: {
      hold: async () => {},
      seenOps: (urls: readonly string[]) => { calls.seenOps.push([...urls]); return undefined; },
      requestPass: () => { calls.passes++; },
      replicas: 1,
    },
  };
}

// The mesh soak (docs/performance.md "Mesh soak"): a host whose owner died went to a member that joined after
// the owner's last replication; the replica seen entries stayed with the successor that had them, and the new
// owner fetched the host's pages again. Hosts handed to us with nothing queued were not replicated at all.
test('ownership: the replica seen entries of a dead owner\'s hosts go to their new owner (passed on, one hop), or, ours now, to our successors; a live owner\'s stay', async () => {
  const { calls, standby } = fakeStandby();
  const r = await rig({ standby });
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bJoins(r);
    // Under {A, B, C} and then {A, C}: `toC` goes from B to C (C joined between B and us), `toUs` from B to us.
    const ab = new HostRing({ replicas: 64 }); ab.add(A); ab.add(B);
    const abc = new HostRing({ replicas: 64 }); abc.add(A); abc.add(B); abc.add(C);
    const ac = new HostRing({ replicas: 64 }); ac.add(A); ac.add(C);
    const names = Array.from({ length: 2000 }, (_, i) => `h${i}.example`);
    const toC = names.find((h) => ab.ownerOf(h) === B && abc.ownerOf(h) === B && ac.ownerOf(h) === C)!;
    const toUs = names.find((h) => ab.ownerOf(h) === B && abc.ownerOf(h) === B && ac.ownerOf(h) === A)!;
    assert.ok(toC && toUs);
    const pages = [`http://${toC}/`, `http://${toC}/p/1`, `http://${toUs}/`];
    // B settles them; we are next: their replica seen entries.
    await r.ownership.acceptFromPeer(pages.map((url) => encodeItem({ kind: 'replica', url })), B);
    assert.equal(r.ownership.refusals()['replica-not-owner'], undefined);
    assert.deepEqual(calls.seenOps, [], 'replicas are not replicated further');
    // C joins; B, still alive, keeps its hosts: nothing moves.
    r.mesh.ring.add(C); r.mesh.vouched.add(C); r.mesh.table.set(C, member(C));
    r.ownership.onMembershipChange({ members: [A, B, C], added: [C], removed: [], dead: [] });
    await r.ownership.rebalancing;
    assert.deepEqual(r.mesh.sentTo(C).map(classifyItem).filter((w) => w.kind === 'seen'), []);
    // B dies before it counted C in (it never re-replicated to it): C owns `toC` now, we own `toUs`.
    r.mesh.ring.remove(B); r.mesh.table.delete(B);
    r.ownership.onMembershipChange({ members: [A, C], added: [], removed: [B], dead: [B] });
    await r.ownership.rebalancing;
    assert.ok(await waitUntil(() => r.mesh.sentTo(C).some((it) => classifyItem(it).kind === 'seen'), 2000), 'C gets the entries');
    const passed = r.mesh.sentTo(C).map(classifyItem).filter((w) => w.kind === 'seen').map((w) => w.kind === 'seen' && `${w.url} ${w.hops}`);
    assert.deepEqual(passed.sort(), [`${pages[0]} 1`, `${pages[1]} 1`], 'the pages of C\'s new host, passed on');
    assert.deepEqual([...r.ownership.settledHosts()], [toUs], 'ours now, known by its seen entries: a settled-only host');
    assert.ok(calls.passes >= 1, 'our successors are caught up');
    // Once passed on, not again at the next change.
    const before = r.mesh.forwarded.length;
    r.ownership.onMembershipChange({ members: [A, C], added: [], removed: [], dead: [] });
    await r.ownership.rebalancing;
    assert.equal(r.mesh.forwarded.slice(before).filter((f) => f.items.some((it) => classifyItem(it).kind === 'seen')).length, 0);
  } finally { await r.close(); }
});

test('ownership: seen entries handed over for a host we own are replicated to its successors (in the write that stores them); passed-on ones are not', async () => {
  const { calls, standby } = fakeStandby();
  const r = await rig({ standby });
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bJoins(r);
    const { b } = hostsByOwner(2);
    // B leaves: its hosts are ours, and it hands over their settled pages.
    r.mesh.table.set(B, member(B, 'leaving'));
    r.mesh.ring.remove(B);
    r.ownership.onMembershipChange({ members: [A], added: [], removed: [B], dead: [] });
    await r.ownership.rebalancing;
    const page = `http://${b[0]}/fetched-by-b`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: page, hops: 0 })], B);
    assert.deepEqual(calls.seenOps, [[page]]);
    assert.deepEqual([...r.ownership.settledHosts()], [b[0]], 'nothing of it queued here: a settled-only host');
  } finally { await r.close(); }
});

// The mesh soak: the member that held a dead owner's replica seen entries passed them to the host's new owner,
// which refused them (`seen-not-owner`: the holder never owned the host) and fetched the pages again.
test('ownership: seen entries of a host whose owner is gone are taken from the member that held its replicas; while the owner lives, refused', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bAndCJoin(r);
    // B owns `host`; we come next, C after us: C held B's replicas (in a view without us, C was next).
    const abc = new HostRing({ replicas: 64 }); abc.add(A); abc.add(B); abc.add(C);
    const host = Array.from({ length: 2000 }, (_, i) => `h${i}.example`).find((h) => abc.nextOwnersOf(h, 3).join() === [B, A, C].join())!;
    assert.ok(host);
    const early = `http://${host}/while-b-lives`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: early, hops: 1 })], C);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'B lives: C may not speak for its host');
    // B dies: the host is ours; C passes on what it held.
    r.mesh.ring.remove(B); r.mesh.table.delete(B);
    r.ownership.onMembershipChange({ members: [A, C], added: [], removed: [B], dead: [B] });
    await r.ownership.rebalancing;
    const page = `http://${host}/fetched-by-b`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: page, hops: 1 })], C);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'taken');
    const stored = await r.store.seen.get(seenKey(hostKey(host), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'not fetched again here');
    // A host of a live owner (C's own, or ours all along with C not a holder of a gone owner's) stays closed to C.
    const ours = Array.from({ length: 2000 }, (_, i) => `h${i}.example`).find((h) => abc.nextOwnersOf(h, 3).join() === [A, C, B].join())!;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: `http://${ours}/hidden`, hops: 1 })], C);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 2);
  } finally { await r.close(); }
});

// The mesh soak (docs/performance.md "Mesh soak"): a member whose handoff passes kept being cut short by joins
// handed a newcomer its hosts' seen entries 16–23 s before its first marker reached it; the newcomer, which had
// not counted it in, refused them (`seen-not-owner`) and fetched those pages again a minute later.
test('ownership: hosts handed to a member we never sent a marker to go behind an introduction (a marker for our ring without it), sent once', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh); // alone: every host is ours
    await r.ownership.rebalancing;
    const solo = r.gate.ringId;
    const { b } = hostsByOwner(2);
    await r.drum.submit(b.map((h) => candidate(`http://${h}/1`, 1, 'page')!), false);
    const fetched = `http://${b[0]}/done`;
    await r.store.fetches.put(seenKey(hostKey(b[0]!), fetched), encodeFetchRecord({ url: fetched, at: 1, status: 200 }));
    await bJoins(r);
    const sent = r.mesh.sentTo(B).map(classifyItem);
    assert.equal(sent[0]?.kind, 'marker', 'an introduction first');
    assert.equal(sent[0]?.kind === 'marker' && sent[0].ringId, solo, 'for our ring without B: it clears no gate of B\'s');
    assert.notEqual(solo, r.gate.ringId);
    assert.ok(sent.findIndex((w) => w.kind === 'seen' && w.url === fetched) > 0, 'the seen entries after it');
    assert.deepEqual(sent.filter((w) => w.kind === 'marker').map((w) => w.kind === 'marker' && w.ringId), [solo, r.gate.ringId], 'then the pass\'s own marker, last');
    // Introduced once: a later handoff to B goes without one.
    r.mesh.ring.remove(B); r.mesh.table.set(B, member(B, 'leaving'));
    r.ownership.onMembershipChange({ members: [A], added: [], removed: [B], dead: [] });
    await r.ownership.rebalancing;
    const c = await r.ownership.introduce(r.mesh, [B, A]);
    assert.deepEqual(c, [], 'B was introduced already; we never introduce ourselves');
    assert.equal(r.mesh.sentTo(B).map(classifyItem).filter((w) => w.kind === 'marker' && w.ringId === solo).length, 1);
  } finally { await r.close(); }
});

test('ownership: an introduction lets a member older than us into our ring as it is read, so the seen entries behind it in the same batch are kept; a younger member\'s stay refused', async () => {
  const r = await rig();
  try {
    await startAlone(r);
    // As Membership does: a vouch puts an active member in our ring, and the ring change reaches ownership at once.
    r.mesh.membership.vouch = (id: string) => {
      if (r.mesh.vouched.has(id) || !r.mesh.table.get(id)) return;
      r.mesh.vouched.add(id); r.mesh.ring.add(id);
      r.ownership.onMembershipChange({ members: r.mesh.ring.members(), added: [id], removed: [], dead: [] });
    };
    // B: in the mesh before us (more heartbeats), heard, but no marker of it yet: not in our ring.
    r.mesh.table.set(B, { ...member(B), seq: 400 });
    const { a } = hostsByOwner(3); // ours under {A, B}; B's without us
    const early = `http://${a[0]}/before-any-marker`;
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: early, hops: 0 })], B);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1, 'a member we do not count yet: refused, as before');
    const onlyB = new HostRing({ replicas: 64 }); onlyB.add(B);
    const page = `http://${a[1]}/fetched-by-b`;
    await r.ownership.acceptFromPeer([encodeHandoffMarker(ringIdOf(onlyB)), encodeItem({ kind: 'seen', url: page, hops: 0 })], B);
    assert.ok(r.mesh.vouched.has(B), 'vouched for by its introduction');
    const stored = await r.store.seen.get(seenKey(hostKey(a[1]!), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'B held the host before it counted us: its page is not fetched again');
    assert.equal(r.ownership.refusals()['seen-not-owner'], 1);
    assert.deepEqual(r.gate.waitingFor(), [B], 'an introduction clears no gate: our hosts wait for B\'s marker for our ring');
    // C came after us (fewer heartbeats): it held none of our hosts, introduced or not.
    r.mesh.table.set(C, member(C));
    const abc = new HostRing({ replicas: 64 }); abc.add(A); abc.add(B); abc.add(C);
    const ours = Array.from({ length: 2000 }, (_, i) => `h${i}.example`).find((h) => abc.nextOwnersOf(h, 2).join() === [A, C].join())!;
    const onlyC = new HostRing({ replicas: 64 }); onlyC.add(C);
    await r.ownership.acceptFromPeer([encodeHandoffMarker(ringIdOf(onlyC)), encodeItem({ kind: 'seen', url: `http://${ours}/hidden`, hops: 0 })], C);
    assert.equal(r.ownership.refusals()['seen-not-owner'], 2, 'a younger member: refused');
    assert.equal(await r.store.seen.get(seenKey(hostKey(ours), `http://${ours}/hidden`)), undefined);
  } finally { await r.close(); }
});

/** Rings over `ids` (64 points each, as the fake mesh's). */
function ringOf(...ids: string[]): HostRing {
  const r = new HostRing({ replicas: 64 });
  for (const id of ids) r.add(id);
  return r;
}

// passReplicas' second case: the replicas we hold came from an earlier owner (alive still), the host moved on
// to a member that then died. Its new owner must learn what the earlier owner had settled.
test('ownership: the owner just declared dead, replica seen entries held from an earlier owner of its host go to the host\'s new owner', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bJoins(r);
    // Under {A, B} the host is B's and we come next; C and E join and it is C's; C dies and it is E's.
    const ab = ringOf(A, B); const abce = ringOf(A, B, C, E); const abe = ringOf(A, B, E);
    const host = Array.from({ length: 5000 }, (_, i) => `h${i}.example`)
      .find((h) => ab.nextOwnersOf(h, 2).join() === [B, A].join() && abce.ownerOf(h) === C && abe.ownerOf(h) === E)!;
    assert.ok(host, 'such a host exists');
    const pages = [`http://${host}/`, `http://${host}/p/1`];
    await r.ownership.acceptFromPeer(pages.map((url) => encodeItem({ kind: 'replica', url })), B);
    assert.equal(r.ownership.refusals()['replica-not-owner'], undefined);
    for (const id of [C, E]) { r.mesh.ring.add(id); r.mesh.vouched.add(id); r.mesh.table.set(id, member(id)); }
    r.ownership.onMembershipChange({ members: [A, B, C, E], added: [C, E], removed: [], dead: [] });
    await r.ownership.rebalancing;
    assert.deepEqual(r.mesh.sentTo(E).map(classifyItem).filter((w) => w.kind === 'seen'), [], 'their sender B lives, the host\'s owner C too: they stay');
    // C is declared dead; B, the sender, lives on.
    r.mesh.ring.remove(C); r.mesh.table.delete(C);
    r.ownership.onMembershipChange({ members: [A, B, E], added: [], removed: [C], dead: [C] });
    await r.ownership.rebalancing;
    assert.ok(await waitUntil(() => r.mesh.sentTo(E).some((it) => classifyItem(it).kind === 'seen'), 2000), 'E gets them');
    const passed = r.mesh.sentTo(E).map(classifyItem).filter((w) => w.kind === 'seen').map((w) => w.kind === 'seen' && `${w.url} ${w.hops}`);
    assert.deepEqual(passed.sort(), pages.map((u) => `${u} 1`).sort(), 'passed on, one hop');
    assert.deepEqual(r.mesh.sentTo(B).map(classifyItem).filter((w) => w.kind === 'seen'), [], 'nothing back to B');
  } finally { await r.close(); }
});

test('ownership: hosts known only by seen entries, and hosts whose replica seen entries we hold, survive a restart', async () => {
  const dir = tempDir('ubicrawl-ownership-');
  const { b } = hostsByOwner(3);
  const ab = ringOf(A, B);
  const replicaHost = Array.from({ length: 2000 }, (_, i) => `r${i}.example`).find((h) => ab.nextOwnersOf(h, 2).join() === [B, A].join())!;
  const r1 = await rig({}, dir);
  try {
    await r1.ownership.start(r1.mesh);
    await r1.ownership.rebalancing;
    r1.mesh.ring.add(B); r1.mesh.vouched.add(B); r1.mesh.table.set(B, member(B));
    r1.ownership.onMembershipChange({ members: [A, B], added: [B], removed: [], dead: [] });
    await r1.ownership.rebalancing;
    await r1.ownership.acceptFromPeer([encodeItem({ kind: 'replica', url: `http://${replicaHost}/` })], B);
    // B leaves and hands us b[0]'s settled page: a host we know only by its seen entry.
    r1.mesh.table.set(B, member(B, 'leaving')); r1.mesh.ring.remove(B);
    r1.ownership.onMembershipChange({ members: [A], added: [], removed: [B], dead: [] });
    await r1.ownership.rebalancing;
    await r1.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: `http://${b[0]}/fetched-by-b`, hops: 0 })], B);
    assert.deepEqual([...r1.ownership.settledHosts()], [b[0]]);
  } finally { await r1.close(); }
  // Restarted with its data dir, in a mesh with B (back, and its replicas' sender) in our ring.
  const r2 = await rig({}, dir);
  try {
    await r2.ownership.restoreRings();
    assert.deepEqual([...r2.ownership.settledHosts()], [b[0]], 'the settled-only host, from the store');
    r2.mesh.ring.add(B); r2.mesh.vouched.add(B); r2.mesh.table.set(B, member(B));
    await r2.ownership.start(r2.mesh);
    await r2.ownership.rebalancing;
    r2.ownership.onMembershipChange({ members: [A, B], added: [], removed: [], dead: [] });
    await r2.ownership.rebalancing;
    const toB = r2.mesh.sentTo(B).map(classifyItem).filter((w) => w.kind === 'seen').map((w) => w.kind === 'seen' && w.url);
    assert.deepEqual(toB, [`http://${b[0]}/fetched-by-b`], 'the settled-only host is B\'s under {A, B}: handed on, as before the restart');
    assert.deepEqual([...r2.ownership.settledHosts()], []);
    // B dies: the host is ours now, known by the replica entry we held before the restart.
    r2.mesh.ring.remove(B); r2.mesh.table.delete(B);
    r2.ownership.onMembershipChange({ members: [A], added: [], removed: [B], dead: [B] });
    await r2.ownership.rebalancing;
    assert.deepEqual([...r2.ownership.settledHosts()], [replicaHost], 'B lived until now: its replicas stayed here; ours now, adopted (our successors will be caught up on it)');
  } finally { await r2.close(); }
});

// docs/mesh.md "Crashes": a replica frame's accept waited for the seen-set round under way and the exclusive
// sections queued before it (7 s before a kill at load 15-20), and a victim's settled pages whose replicas were
// still on their way were fetched again by their next owner.
test('ownership: replica seen entries of another member\'s hosts are stored without waiting for the seen-set; handed-over seen entries still wait', async () => {
  const r = await rig();
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bJoins(r);
    const { b: [hb] } = hostsByOwner(1);
    // A long section holds the seen-set (a round under load, a handoff's chunk).
    let release!: () => void;
    const held = r.drum.exclusive(() => new Promise<void>((res) => { release = res; }));
    try {
      // B settles a page of its host; we are next.
      await r.ownership.acceptFromPeer([encodeItem({ kind: 'replica', url: `http://${hb}/` })], B);
      const stored = await r.store.seen.get(seenKey(hostKey(hb!), `http://${hb}/`));
      assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere', 'stored while the section runs');
      // A handed-over seen entry (B owned the host) still takes the exclusive section.
      let done = false;
      const handed = r.ownership.acceptFromPeer([encodeItem({ kind: 'seen', url: `http://${hb}/p/1`, hops: 0 })], B).then(() => { done = true; });
      await new Promise((res) => setImmediate(res));
      assert.equal(done, false, 'waits for the section');
      release();
      await handed;
      assert.equal(done, true);
    } finally {
      release();
      await held;
    }
  } finally {
    await r.close();
  }
});

// A graceful leaver passes on the replicas it held for an owner (docs/mesh.md "Replicated frontier", a holder
// that leaves): held for that owner, not for the leaver; replica seen entries only from a holder heard leaving.
test('ownership: replicas a leaver held for an owner and passes on are held for that owner; its seen entries are taken only once it is heard leaving, and only where it held them', async () => {
  const held: Array<{ url: string; from?: string; passedOn?: boolean }> = [];
  const r = await rig({ standby: { hold: async (urls) => { held.push(...urls.map((u) => ({ url: u.url, from: u.from, passedOn: u.passedOn }))); }, replicas: 1 } });
  try {
    await r.ownership.start(r.mesh);
    await r.ownership.rebalancing;
    await bAndCJoin(r);
    // B owns `host`, C came next (it held B's replicas), we after C.
    const abc = new HostRing({ replicas: 64 }); abc.add(A); abc.add(B); abc.add(C);
    const names = Array.from({ length: 2000 }, (_, i) => `h${i}.example`);
    const host = names.find((h) => abc.nextOwnersOf(h, 3).join() === [B, C, A].join())!;
    const notHeld = names.find((h) => abc.nextOwnersOf(h, 3).join() === [B, A, C].join())!;
    assert.ok(host && notHeld);
    const page = `http://${host}/settled-at-b`;
    const queued = `http://${host}/queued-at-b`;
    const passed = [encodeItem({ kind: 'queued', url: queued, depth: 2, sitemap: false, owner: B }), encodeItem({ kind: 'replica', url: page, owner: B })];
    // C has not been heard leaving yet (its batch overtook its heartbeat): retried, nothing written.
    await assert.rejects(r.ownership.acceptFromPeer(passed, C));
    assert.equal(r.ownership.refusals()['held-before-leave'], 1);
    assert.deepEqual(held, []);
    assert.equal(await r.store.seen.get(seenKey(hostKey(host), page)), undefined);
    // C leaves.
    r.mesh.table.set(C, member(C, 'leaving'));
    r.mesh.ring.remove(C);
    r.ownership.onMembershipChange({ members: [A, B], added: [], removed: [C], dead: [] });
    await r.ownership.rebalancing;
    await r.ownership.acceptFromPeer(passed, C);
    assert.deepEqual(held, [{ url: queued, from: B, passedOn: true }], 'held for B, whose fate decides');
    const stored = await r.store.seen.get(seenKey(hostKey(host), page));
    assert.ok(stored && seenStateOf(stored) === 'settled-elsewhere');
    assert.equal(r.ownership.heldReplicaHost(host)?.from, B, 'passed on to the host\'s new owner should B go');
    // Where C never held B's replicas (we came first), its claim hides nothing: refused.
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'replica', url: `http://${notHeld}/hidden`, owner: B })], C);
    assert.equal(r.ownership.refusals()['replica-not-owner'], 1);
    assert.equal(await r.store.seen.get(seenKey(hostKey(notHeld), `http://${notHeld}/hidden`)), undefined);
    // Our own queue is ours: a claim that we are the owner is dropped.
    await r.ownership.acceptFromPeer([encodeItem({ kind: 'queued', url: `http://${host}/ours`, depth: 1, sitemap: false, owner: A })], C);
    assert.equal(held.length, 1);
  } finally { await r.close(); }
});
