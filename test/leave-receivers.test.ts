// A leaver whose own ring names nobody else hands its queue to the members it
// still hears (src/crawl/leave-receivers.ts, docs/mesh.md "Graceful leave").
// In the mesh soak (docs/performance.md "Mesh soak") a leaver's ring emptied
// while eleven members were alive (they had been left out for acknowledging
// nothing, or had not sent it a marker yet): it exited with 240 URLs queued,
// some of them queued nowhere else. The router with a fake node: a ring and an
// outbox that records what it would send.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { HostRing } from '../src/assign/ring.js';
import { SitemapGrants } from '../src/sitemap/grants.js';
import { Sitemaps } from '../src/crawl/sitemaps.js';
import { MeshRouter } from '../src/crawl/mesh-router.js';
import { leaveReceivers } from '../src/crawl/leave-receivers.js';
import type { AgentMesh } from '../src/crawl/mesh.js';
import type { AgentState } from '../src/api/backend.js';
import { classifyItem, type MemberInfo, type UrlItem } from '../src/mesh/index.js';
import { silentLogger } from '../src/util/log.js';
import { pipelineRig } from './pipeline-fixtures.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'; // self, leaving
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';

function member(id: string, heardAgoMs = 0, state: MemberInfo['state'] = 'active'): MemberInfo {
  return { id, incarnation: 1, state, capacity: 1, addrs: [], seq: 1, counters: { fetched: 0, queued: 0, sent: 0, received: 0 }, lastHeard: Date.now() - heardAgoMs, self: id === A };
}

test('leave receivers: active members heard lately, not us; those left out only when nobody else is', () => {
  const now = Date.now();
  const ms = [member(A), member(B), member(C), member('12D3KooWDDDD', 60_000), member('12D3KooWEEEE', 0, 'leaving')];
  assert.deepEqual(leaveReceivers(ms, () => false, now, 5000).map((m) => m.id), [B, C]);
  assert.deepEqual(leaveReceivers(ms, (id) => id === B, now, 5000).map((m) => m.id), [C]);
  assert.deepEqual(leaveReceivers(ms, () => true, now, 5000).map((m) => m.id), [B, C], 'a try beats leaving with the queue');
  assert.deepEqual(leaveReceivers([member(A)], () => false, now, 5000), []);
});

/** A node whose ring holds only us (B and C are heard, but not in our ring); leaving takes us out of it. */
class LonelyMesh extends EventEmitter {
  readonly id = A;
  readonly stats = { excluded: { stall: 0, quota: 0 }, forgotten: 0 };
  readonly forwarded: { owner: string; items: UrlItem[] }[] = [];
  readonly ring = new HostRing({ replicas: 64 });
  readonly membership = {
    ring: this.ring, stats: { rejected: {} }, member: (id: string) => this.members().find((m) => m.id === id),
    isVouched: (id: string) => id === A, isExcluded: () => false, vouch: () => {}, on: () => this.membership, refusals: () => ({}),
  };
  readonly outbox = {
    forgetRecent: () => {}, queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({}),
    totalQueued: () => 0, waitEmpty: async () => true,
  };
  readonly replicas = { queued: () => 0, isPaused: () => false, peers: () => [], reassign: async () => ({}), queueOps: () => ({ ops: [], n: 0 }), written: () => {} };
  readonly exchange = Object.assign(new EventEmitter(), { inboxPeers: async () => [], stats: () => ({ rejected: {}, throttled: 0 }) });
  constructor() { super(); this.ring.add(A); }
  ownerOf(host: string): string { return this.ring.ownerOf(host) ?? A; }
  members(): MemberInfo[] { return [member(A), member(B), member(C)]; }
  async forward(owner: string, items: UrlItem[]): Promise<number> { this.forwarded.push({ owner, items }); return items.length; }
  async leave(): Promise<void> { this.ring.remove(A); }
  async stop(): Promise<void> {}
}

test('a leaver whose ring names nobody else hands its queue to the members it still hears', async () => {
  const r = await pipelineRig((c) => { c.mesh.enabled = true; });
  const mesh = new LonelyMesh();
  let lifecycle: AgentState = 'active';
  const router = new MeshRouter({
    config: r.config, store: r.store, frontier: r.frontier, admission: r.admission, barrier: r.barrier, metrics: r.metrics, log: silentLogger,
    sitemaps: new Sitemaps({ config: r.config, grants: new SitemapGrants(r.store.meta), admission: r.admission, recrawl: undefined, stats: r.stats, log: silentLogger, route: async () => {} }),
    lifecycle: () => lifecycle, schedulePump: () => {}, counters: () => ({ fetched: 0, queued: 0 }), localIdle: () => true, working: () => false,
    onIdle: () => {}, onFatal: (e) => r.fatal.push(e), stopping: () => false,
    startMesh: async (handlers) => { handlers.created?.(mesh as unknown as AgentMesh); return mesh as unknown as AgentMesh; },
  });
  try {
    await router.start();
    const urls = Array.from({ length: 30 }, (_, i) => `http://h${i}.example/`);
    await router.route(urls.map((u) => r.admission.asSeed(r.admission.candidate(u, undefined, 0)!)));
    assert.equal(r.frontier.queued, urls.length, 'all ours while our ring holds only us');
    lifecycle = 'leaving'; // as Agent.leave() does before the router's leave
    await router.leave();
    const sent = mesh.forwarded.flatMap((f) => f.items.map((it) => ({ owner: f.owner, item: classifyItem(it) })))
      .filter((s) => s.item.kind === 'crawl');
    assert.equal(r.frontier.queued, 0, 'nothing left queued here');
    assert.deepEqual(sent.map((s) => (s.item.kind === 'crawl' ? s.item.url : '')).sort(), [...urls].sort(), 'every queued URL handed over');
    assert.ok(sent.every((s) => s.owner === B || s.owner === C), 'to the members we hear');
    assert.ok(new Set(sent.map((s) => s.owner)).size === 2, 'spread over them by a ring');
  } finally { router.quiesce(); await router.stop(); await r.close(); }
});
