// Queued replicas of a member that left with nothing queued (an --until-idle
// end) are dropped, not promoted: its pages were settled there, and it hands no
// seen entries over (src/crawl/left-empty.ts, docs/mesh.md "Replicated frontier").
// The join/leave test (test/mesh-crawl.test.ts) fetched seed roots twice when
// the first agents to end announced their end and a survivor promoted stale replicas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { openStore } from '../src/store/db.js';
import { hostKey, seenKey } from '../src/store/keys.js';
import { Outbox } from '../src/mesh/index.js';
import { tempDir } from './helpers.js';
import { replicaAlone } from './replica-fixture.js';

const A = '12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'; // self
const B = '12D3KooWBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const C = '12D3KooWCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';

test('replicated frontier: a member that left with nothing queued has its held URLs dropped; one that left with a queue has them promoted', async () => {
  const store = await openStore(tempDir());
  const outbox = await Outbox.open({ db: store.replicas, recentSize: 0 });
  try {
    const ring = new HostRing({ replicas: 64 });
    for (const id of [A, B, C]) ring.add(id);
    // Hosts of B and of C whose next owner is us: ours once their owner leaves.
    const hosts = Array.from({ length: 400 }, (_, i) => `h${i}.example`);
    const ofB = hosts.find((h) => ring.nextOwnersOf(h, 2).join() === [B, A].join())!;
    const ofC = hosts.find((h) => ring.nextOwnersOf(h, 2).join() === [C, A].join())!;
    const promoted: string[] = [];
    const replica = replicaAlone(store, { promoted });
    replica.attach({ id: A, membership: { ring }, replicas: outbox });
    replica.ringChanged();
    await replica.settled;
    const held = [`http://${ofB}/settled-at-b`, `http://${ofC}/queued-at-c`];
    await replica.hold(held.map((url) => ({ key: seenKey(hostKey(new URL(url).hostname), url), url, depth: 1, sitemap: false })));
    assert.equal(replica.stats.held, 2);
    // B ends its run (nothing queued): its hosts are ours, its stale replica is not fetched.
    ring.remove(B);
    replica.ringChanged([B]);
    // C leaves with URLs queued (a crash, or a leave whose handoff was lost): its replica is promoted.
    ring.remove(C);
    replica.ringChanged([]);
    const deadline = Date.now() + 5000;
    while (promoted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await replica.settled;
    assert.deepEqual(promoted, [held[1]], 'only the queue of the member that left with URLs queued is promoted');
    assert.equal(replica.stats.dropped, 1, 'the stale replica is dropped');
    assert.deepEqual(await store.standby.iterator().all(), [], 'nothing is held any more');
  } finally {
    await outbox.close?.();
    await store.close();
  }
});
