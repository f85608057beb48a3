// Hostile peers (docs/mesh.md "Admission"; the mesh and the hostile node: hostile-fixture.ts): a churn of identities.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTBEAT, Hostile, finish, sleep, startMesh } from './hostile-fixture.js';

test('(c) a new identity every second (each a member for a second) does not stall the crawl or grow the member table', async (t) => {
  // The run ends on three identical idle rounds. When a member's youth was measured by the clock, each churning
  // identity counted once older than dead-after + 2 heartbeats, through its silent tail until declared dead, and
  // changed them: the crawl, done, took 33 s to end, or did not within 60 s. Youth is now how long it was heard
  // (src/crawl/idle-members.ts): the churn never enters the idle rounds, and the run ends in about 10 s.
  const mesh = await startMesh(13);
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
