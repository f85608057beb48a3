// Hostile peers (docs/mesh.md "Admission"; the mesh and the hostile node: hostile-fixture.ts): a member flooding heartbeats and batches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { hostOf } from '../src/url/normalize.js';
import { FLOOD_RATE, HEARTBEAT, Hostile, finish, sleep, startMesh, sum } from './hostile-fixture.js';

// (e) has a mesh of its own: whether its flood is throttled depends on how fast the agents take batches in. On a
// mesh shared with (a), beside a core kept busy, it was in 1 of 4 runs (load 10–21); on its own, in 2 of 4 (load
// 11–25: it missed at 23–25), so no cause was shown, but the shared mesh was not kept.

test('(e) a member flooding heartbeats and batches is slowed down; the crawl goes on', async (t) => {
  const mesh = await startMesh(14, ['--peer-rate', String(FLOOD_RATE)]);
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
