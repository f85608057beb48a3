// Hostile peers (docs/mesh.md "Admission"; the mesh and the hostile node: hostile-fixture.ts): a member claiming capacity 1e6, and garbage frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTBEAT, Hostile, finish, sleep, startMesh, sum } from './hostile-fixture.js';

// Two cases share this mesh (three agents and a crawl: a sixth of the hostile cases' CPU). Each case's hostile
// node is an identity of its own, and what each case asserts is counted apart from the other's: a stranger's
// streams are refused as they open, before a frame is read (src/mesh/exchange.ts `serve`), so (a)'s refusals
// are 'not-member' only, never (d)'s refusals of a member's items; a member claiming capacity 1e6 (b) opens no
// URL stream, and (f)'s nodes publish honest heartbeats or none. Every hostile node hears the honest agents
// before any of them publishes a heartbeat (Hostile.honest() counts whoever beats).

test('(b) a member that claims capacity 1e6 is refused; it takes no hosts and swallows no URLs; (f) garbage frames from members and strangers are refused and counted; nothing crashes', async (t) => {
  // (f) The crawl must outlast the garbage (a dozen streams to each agent, slow on a loaded machine): an agent that
  // ended its run acknowledges nothing. One host's pages answer slowly until the garbage is over.
  let holding = true;
  const mesh = await startMesh(12, [], 10, (_host, path, hostIndex) => (holding && hostIndex === 0 && path !== '/robots.txt' ? 3000 : 0));
  const greedy = await Hostile.start(mesh.port);
  const stranger = await Hostile.start(mesh.port);
  const evil = await Hostile.start(mesh.port);
  try {
    const honest = await evil.honest();
    await stranger.honest();
    await greedy.honest();
    // (b)
    await greedy.serveUrls('ack'); // were it an owner, what it acks is lost
    greedy.join({ capacity: 1e6 });
    // (f)
    evil.join();
    await sleep(4 * HEARTBEAT);
    const good = evil.frame(1, [{ url: mesh.web.roots()[0]!, depth: 0, hops: 0 }]);
    // type, version, flags, from, batchId, epoch, then a run count of 2^31 − 1.
    const hugeCount = Uint8Array.from([1, 1, 0, evil.id.length, ...Buffer.from(evil.id, 'latin1'), ...new Uint8Array(8).fill(0), ...new Uint8Array(8).fill(0), 0xff, 0xff, 0xff, 0xff, 0x07]);
    const garbage: Array<[string, Uint8Array]> = [
      ['endless varint', new Uint8Array(12).fill(0xff)],
      ['oversize prefix', Uint8Array.from([0x81, 0x80, 0x80, 0x01, 1, 2, 3])],
      ['nonsense', Uint8Array.from([5, 9, 9, 9, 9, 9])],
      ['huge run count', Uint8Array.from([hugeCount.length, ...hugeCount])],
      ['truncated', good.subarray(0, good.length - 3)],
      ['random', Uint8Array.from({ length: 300 }, (_, i) => (i * 7919 + 13) & 0xff)],
    ];
    for (const to of honest.ids) {
      for (const [what, bytes] of garbage) {
        for (const who of [evil, stranger]) {
          const r = await who.send(to, [bytes]);
          assert.deepEqual(r.acks, [], `(f) ${what} from ${who === evil ? 'a member' : 'a stranger'}: not acknowledged`);
        }
      }
      // The agent still serves its member: like an honest sender, it retries a stream that was refused
      // (the agent takes 3 streams at a time per connection, and the garbage ones may not have closed yet).
      let ok = await evil.send(to, [evil.frame(7, [{ url: mesh.web.roots()[1]!, depth: 0, hops: 0 }])], { readAcks: 1 });
      for (let i = 0; i < 5 && ok.acks.length === 0; i++) {
        await sleep(200 * 2 ** i);
        ok = await evil.send(to, [evil.frame(7, [{ url: mesh.web.roots()[1]!, depth: 0, hops: 0 }])], { readAcks: 1 });
      }
      assert.deepEqual(ok.acks, [7], `(f) a good batch after the garbage is acknowledged (${ok.error})`);
    }
    holding = false;
    const ss = await finish(mesh, t);
    assert.ok(sum(ss, (s) => Object.values(s.mesh.heartbeatsRejected).reduce((a, b) => a + b, 0)) >= 3, '(b) its heartbeats are refused and counted');
    for (const reason of ['framing', 'oversize', 'type', 'count', 'truncated', 'not-member']) {
      assert.ok(sum(ss, (s) => s.mesh.refused[reason]) >= 1, `(f) ${reason} counted (${JSON.stringify(ss.map((s) => s.mesh.refused))})`);
    }
  } finally {
    await greedy.stop();
    await evil.stop();
    await stranger.stop();
    await mesh.close();
  }
});
