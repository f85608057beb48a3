// Hostile peers (docs/mesh.md "Admission"; the mesh and the hostile node: hostile-fixture.ts): a member flooding heartbeats and batches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { RECEIVE_BURST_SECONDS } from '../src/config.js';
import { hostOf } from '../src/url/normalize.js';
import { FLOOD_RATE, HEARTBEAT, Hostile, finish, sleep, startMesh } from './hostile-fixture.js';

// (e) has a mesh of its own: whether its flood is throttled depends on how fast the agents take batches in. On a
// mesh shared with (a), beside a core kept busy, it was in 1 of 4 runs (load 10–21); on its own, in 2 of 4 (load
// 11–25: it missed at 23–25), so no cause was shown, but the shared mesh was not kept.
//
// When is a flood throttled? The bucket holds a burst of RECEIVE_BURST_SECONDS × rate and refills at the rate; the
// agent takes one sender's frames one after the other, and checks the bucket as it reads each. With frames of a
// second's worth each (N = 16 of them), the last ones waited only if the agent took each in under 1 − 5/N s (0.69 s):
// an agent on a loaded machine missed that (throttled 0,0,0 beside other files, and once alone at load 35); with
// frames of a whole burst each, one agent of three still took a first frame in too slowly to be throttled on the
// second (load 29, two CPU spinners beside it). Each frame here is one and a half bursts' worth: a full bucket does
// not cover even the first, and the bucket reserves what it lends, so every agent waits on each frame whatever its
// speed. The flood then lasts at least (2 × 750 − 500) / 100 = 10 s: one host answers slowly until it is over, so
// that the crawl (and the agents' runs) outlast it.
const FLOOD_BATCHES = 2;
const FLOOD_BATCH = (RECEIVE_BURST_SECONDS * FLOOD_RATE * 3) / 2;

test('(e) a member flooding heartbeats and batches is slowed down; the crawl goes on', async (t) => {
  let holding = true;
  const mesh = await startMesh(14, ['--peer-rate', String(FLOOD_RATE)], 10, (_host, path, hostIndex) => (holding && hostIndex === 0 && path !== '/robots.txt' ? 3000 : 0));
  const evil = await Hostile.start(mesh.port);
  try {
    const honest = await evil.honest();
    evil.join({}, 5); // 200 heartbeats a second
    await sleep(4 * HEARTBEAT);
    // Batches of 750 of the web's own URLs (the crawl would find them anyway): 1,500 per agent against a
    // limit of 100 a second in bursts of 500. Each agent gets URLs of its own hosts: it takes them in at once
    // (no forwarding to their owners).
    const urls = [...mesh.expected];
    const ring = new HostRing();
    for (const id of [...honest.ids, evil.id]) ring.add(id, 1);
    const ownedBy = (to: string) => { const mine = urls.filter((u) => ring.ownerOf(hostOf(u)!) === to); return mine.length ? mine : urls; };
    const its = (to: string, k: number) => { const mine = ownedBy(to); return Array.from({ length: FLOOD_BATCH }, (_, i) => ({ url: mine[(k * FLOOD_BATCH + i) % mine.length]!, depth: 1, hops: 0 })); };
    const floods = honest.ids.map((to, j) => evil.send(to, Array.from({ length: FLOOD_BATCHES }, (_, k) => evil.frame(j * 100 + k + 1, its(to, k))), { readAcks: FLOOD_BATCHES }));
    const res = await Promise.all(floods);
    holding = false;
    const ss = await finish(mesh, t);
    // The bucket reserves what it lends: the last batch is taken in no sooner than (all − burst) / rate after the first.
    const minMs = ((FLOOD_BATCHES * FLOOD_BATCH - RECEIVE_BURST_SECONDS * FLOOD_RATE) / FLOOD_RATE) * 1000;
    for (const r of res) {
      assert.equal(r.acks.length, FLOOD_BATCHES, `every flood batch is acknowledged in the end (${r.error})`);
      assert.ok(r.ms >= minMs, `but no faster than the limit allows (${r.ms} ms for ${FLOOD_BATCHES * FLOOD_BATCH} URLs at ${FLOOD_RATE}/s, burst ${RECEIVE_BURST_SECONDS * FLOOD_RATE}; at least ${minMs} ms)`);
    }
    // Each batch is more than a full bucket: every agent waited on the first, whatever its speed (on the second
    // too, unless it spent 7.5 s taking the first in).
    assert.deepEqual(ss.map((s) => (s.mesh.throttled ?? 0) >= 1), ss.map(() => true), `the slowed batches are counted (throttled ${ss.map((s) => s.mesh.throttled).join(',')})`);
  } finally {
    await evil.stop();
    await mesh.close();
  }
});
