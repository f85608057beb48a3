// Hostile peers (docs/mesh.md "Admission"; the mesh and the hostile node: hostile-fixture.ts): a stranger's batches and a member that never acknowledges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostRing } from '../src/assign/ring.js';
import { encodeHandoffMarker } from '../src/mesh/wire.js';
import { hostOf } from '../src/url/normalize.js';
import { HEARTBEAT, PEER_STALL_D, Hostile, bait, finish, forgedSeen, sleep, startMesh, sum } from './hostile-fixture.js';

// Two cases share this mesh (three agents and a crawl: a sixth of the hostile cases' CPU). Each case's hostile
// node is an identity of its own, and what each case asserts is counted apart from the other's: a stranger's
// streams are refused as they open, before a frame is read (src/mesh/exchange.ts `serve`), so (a)'s refusals
// are 'not-member' only, never (d)'s refusals of a member's items; a member claiming capacity 1e6 (b) opens no
// URL stream, and (f)'s nodes publish honest heartbeats or none. Every hostile node hears the honest agents
// before any of them publishes a heartbeat (Hostile.honest() counts whoever beats).

test('(a) a peer that never joined: its URL batches and seen entries are refused unacknowledged and counted; (d) a member that never acknowledges is left out of the rings and its queue re-routed; its forged seen entries are refused', async (t) => {
  const mesh = await startMesh(11, ['--peer-stall', String(PEER_STALL_D)]);
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
