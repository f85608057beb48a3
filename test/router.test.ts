// Routing (src/crawl/router.ts, src/crawl/mesh-router.ts) built alone: alone
// every URL is queued here; in a mesh (a fake node: a ring and an outbox that
// records what it would send) a foreign URL goes to its owner, up to the hop
// limit, and a settled page's replica to the host's next owner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { HostRing } from '../src/assign/ring.js';
import { SitemapGrants } from '../src/sitemap/grants.js';
import { Sitemaps } from '../src/crawl/sitemaps.js';
import { StandaloneRouter } from '../src/crawl/router.js';
import { MeshRouter } from '../src/crawl/mesh-router.js';
import type { AgentMesh } from '../src/crawl/mesh.js';
import type { BatchOp } from '../src/store/db.js';
import { classifyItem, type MemberInfo, type UrlItem } from '../src/mesh/index.js';
import { silentLogger } from '../src/util/log.js';
import { activeMember as member, MEMBER_A as A, MEMBER_B as B, pipelineRig, type PipelineRig } from './pipeline-fixtures.js';


/** A mesh node as the router and ownership use it: two members in one ring, an outbox that records. */
class FakeMesh extends EventEmitter {
  readonly id = A;
  readonly stats = { excluded: { stall: 0, quota: 0 }, forgotten: 0 };
  readonly forwarded: { owner: string; items: UrlItem[] }[] = [];
  readonly replicaQueue: { peer: string; items: UrlItem[] }[] = [];
  readonly ring = new HostRing({ replicas: 64 });
  readonly membership = {
    ring: this.ring, stats: { rejected: {} }, member: (id: string) => (id === A || id === B ? member(id) : undefined),
    isVouched: () => true, isExcluded: () => false, vouch: () => {}, on: () => this.membership, refusals: () => ({}),
  };
  readonly outbox = { forgetRecent: () => {}, queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({}) };
  readonly replicas = {
    queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({}),
    queueOps: (peer: string, items: UrlItem[]) => { this.replicaQueue.push({ peer, items }); return { ops: [{ type: 'put', key: Buffer.from('rk'), value: Buffer.from('rv') }], n: items.length, seq: this.replicaQueue.length }; },
    written: () => {},
  };
  readonly exchange = Object.assign(new EventEmitter(), { inboxPeers: async () => [], stats: () => ({ rejected: {}, throttled: 0 }) });
  constructor() { super(); this.ring.add(A); this.ring.add(B); }
  ownerOf(host: string): string { return this.ring.ownerOf(host) ?? A; }
  members(): MemberInfo[] { return [member(A), member(B)]; }
  async forward(owner: string, items: UrlItem[]): Promise<number> { this.forwarded.push({ owner, items }); return items.length; }
  async stop(): Promise<void> {}
}

function sitemaps(r: PipelineRig): Sitemaps {
  return new Sitemaps({ config: r.config, grants: new SitemapGrants(r.store.meta), admission: r.admission, recrawl: undefined, stats: r.stats, log: silentLogger, route: async () => {} });
}

test('standalone router: every host is ours, every URL queued here; an id stable per data dir', async () => {
  const r = await pipelineRig();
  try {
    const router = new StandaloneRouter({ store: r.store, admission: r.admission, sitemaps: sitemaps(r) });
    await router.start();
    const id = router.id;
    assert.match(id, /^[0-9a-f]{12}$/);
    assert.equal(router.owns('any.example'), true);
    await router.route([r.admission.asSeed(r.admission.candidate('http://any.example/', undefined, 0)!)]);
    assert.equal(r.frontier.queued, 1);
    assert.equal(router.replicate('any.example', 'http://any.example/', []), undefined, 'nobody to replicate to');
    const again = new StandaloneRouter({ store: r.store, admission: r.admission, sitemaps: sitemaps(r) });
    await again.start();
    assert.equal(again.id, id);
  } finally { await r.close(); }
});

test('mesh router: foreign URLs go to their owner with one hop more, ours and those past the hop limit are queued here; replicas go to the next owner', async () => {
  const r = await pipelineRig((c) => { c.mesh.enabled = true; });
  const mesh = new FakeMesh();
  const router = new MeshRouter({
    config: r.config, store: r.store, frontier: r.frontier, admission: r.admission, sitemaps: sitemaps(r), barrier: r.barrier, metrics: r.metrics, log: silentLogger,
    lifecycle: () => 'active', schedulePump: () => {}, counters: () => ({ fetched: 0, queued: 0 }), localIdle: () => true, working: () => false,
    onIdle: () => {}, onFatal: (e) => r.fatal.push(e), stopping: () => false,
    startMesh: async (handlers) => { handlers.created?.(mesh as unknown as AgentMesh); return mesh as unknown as AgentMesh; },
  });
  try {
    await router.start();
    const hosts = Array.from({ length: 40 }, (_, i) => `h${i}.example`);
    const ours = hosts.filter((h) => mesh.ownerOf(h) === A);
    const theirs = hosts.filter((h) => mesh.ownerOf(h) === B);
    assert.ok(ours.length > 0 && theirs.length > 1, 'both own hosts');
    const cands = [...ours, ...theirs].map((h) => r.admission.asSeed(r.admission.candidate(`http://${h}/`, undefined, 0)!));
    const lastHop = cands[cands.length - 1]!;
    lastHop.hops = r.config.mesh.maxHops;
    await router.route(cands);
    // Handoff markers (ownership starting up) go out on the same streams: only the URLs count here.
    const sent = mesh.forwarded.flatMap((f) => f.items.map((it) => ({ owner: f.owner, item: classifyItem(it) }))).filter((s) => s.item.kind === 'crawl');
    assert.deepEqual(sent.map((s) => s.owner), theirs.slice(0, -1).map(() => B));
    assert.ok(sent.every((s) => s.item.kind === 'crawl' && s.item.hops === 1), 'one hop more');
    assert.equal(r.frontier.queued, ours.length + 1, 'ours, and the one past the hop limit');
    assert.equal(router.sent(), theirs.length - 1);
    assert.equal(router.owns(ours[0]!), true);
    assert.equal(router.owns(theirs[0]!), false);
    const ops: BatchOp[] = [];
    const rep = router.replicate(ours[0]!, `http://${ours[0]}/`, ops);
    assert.deepEqual(rep, [{ peer: B, n: 1, seq: 1 }], 'the next owner on the ring');
    assert.equal(ops.length, 1);
    assert.equal(ops[0]!.sublevel, r.store.replicas, 'written with the completion, in the replicas sublevel');
  } finally { router.quiesce(); await router.stop(); await r.close(); }
});
