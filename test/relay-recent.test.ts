// URLs relayed from peers skip the outbox's "recently forwarded" cache
// (src/crawl/mesh-router.ts `route`, docs/mesh.md "Outbox layout"). In the mesh
// soak (docs/performance.md "Mesh soak") two members whose views disagreed about
// a host passed its queued URL back and forth — a handoff, then forwards — and
// the cache of the first dropped it on its second bounce ("sent to that peer
// lately"), although that peer had passed it on: the URL was queued nowhere.
// The router with a fake node whose outbox is a real one (its cache included).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { HostRing } from '../src/assign/ring.js';
import { SitemapGrants } from '../src/sitemap/grants.js';
import { Sitemaps } from '../src/crawl/sitemaps.js';
import { MeshRouter } from '../src/crawl/mesh-router.js';
import type { AgentMesh, MeshHandlers } from '../src/crawl/mesh.js';
import { classifyItem, encodeItem, Outbox, type MemberInfo, type UrlItem } from '../src/mesh/index.js';
import { silentLogger } from '../src/util/log.js';
import { activeMember as member, MEMBER_A as A, MEMBER_B as B, pipelineRig } from './pipeline-fixtures.js';


class RelayMesh extends EventEmitter {
  readonly id = A;
  readonly stats = { excluded: { stall: 0, quota: 0 }, forgotten: 0 };
  readonly ring = new HostRing({ replicas: 64 });
  readonly membership = {
    ring: this.ring, stats: { rejected: {} }, member: (id: string) => (id === A || id === B ? member(id) : undefined),
    isVouched: () => true, isExcluded: () => false, vouch: () => {}, on: () => this.membership, refusals: () => ({}),
  };
  readonly replicas = { queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({}), queueOps: () => ({ ops: [], n: 0 }), written: () => {} };
  readonly exchange = Object.assign(new EventEmitter(), { inboxPeers: async () => [], stats: () => ({ rejected: {}, throttled: 0 }) });
  readonly outbox: Outbox & { peers(): string[] };
  constructor(readonly real: Outbox) {
    super();
    this.ring.add(A); this.ring.add(B);
    // Ownership's periodic re-routes look at peers(): none here; the queue is read through `real`.
    this.outbox = Object.assign(Object.create(real) as Outbox, { peers: () => [] as string[], reassign: async () => ({}) });
  }
  ownerOf(host: string): string { return this.ring.ownerOf(host) ?? A; }
  members(): MemberInfo[] { return [member(A), member(B)]; }
  /** URLs to crawl actually queued per peer (after the cache), handoff markers left out. */
  readonly crawlQueued = new Map<string, number>();
  async forward(owner: string, items: UrlItem[], handoff = false): Promise<number> {
    const n = await this.real.enqueue(owner, items, { bypassRecent: handoff });
    if (items.every((it) => classifyItem(it).kind === 'crawl')) this.crawlQueued.set(owner, (this.crawlQueued.get(owner) ?? 0) + n);
    return n;
  }
  async stop(): Promise<void> {}
}

test('a URL that comes back from a peer is forwarded again, although we sent it to that peer lately', async () => {
  const r = await pipelineRig((c) => { c.mesh.enabled = true; });
  const real = await Outbox.open({ db: r.store.outbox });
  const mesh = new RelayMesh(real);
  let handlers: MeshHandlers | undefined;
  const router = new MeshRouter({
    config: r.config, store: r.store, frontier: r.frontier, admission: r.admission, barrier: r.barrier, metrics: r.metrics, log: silentLogger,
    sitemaps: new Sitemaps({ config: r.config, grants: new SitemapGrants(r.store.meta), admission: r.admission, recrawl: undefined, stats: r.stats, log: silentLogger, route: async () => {} }),
    lifecycle: () => 'active', schedulePump: () => {}, counters: () => ({ fetched: 0, queued: 0 }), localIdle: () => true, working: () => false,
    onIdle: () => {}, onFatal: (e) => r.fatal.push(e), stopping: () => false,
    startMesh: async (h) => { handlers = h; h.created?.(mesh as unknown as AgentMesh); return mesh as unknown as AgentMesh; },
  });
  try {
    await router.start();
    const host = Array.from({ length: 40 }, (_, i) => `h${i}.example`).find((h) => mesh.ownerOf(h) === B)!;
    const url = `http://${host}/p/2`;
    const sent = () => mesh.crawlQueued.get(B) ?? 0;
    // B hands the host to us (its view: ours), hops 0; ours says B's: passed on to B.
    await handlers!.accept([encodeItem({ kind: 'crawl', url, depth: 1, hops: 0, sitemap: false })], B);
    assert.equal(sent(), 1, 'passed on to the owner in our view');
    // B, still seeing us as the owner, sends it back (hops 2): passed on again, not dropped as "sent lately".
    await handlers!.accept([encodeItem({ kind: 'crawl', url, depth: 1, hops: 2, sitemap: false })], B);
    assert.equal(sent(), 2, 'the bounced URL is queued for B again');
    // Links of our own pages still go through the cache: one page's link to B's host, found twice, goes once.
    const link = `http://${host}/p/3`;
    await router.route([r.admission.candidate(link, undefined, 1)!]);
    await router.route([r.admission.candidate(link, undefined, 1)!]);
    assert.equal(sent(), 3, 'a link of ours found twice is forwarded once');
  } finally { router.quiesce(); await router.stop(); await real.close(); await r.close(); }
});
