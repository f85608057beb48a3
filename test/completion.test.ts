// Completion (src/crawl/completion.ts) built alone: links routed first, then the
// URL's frontier entry, seen state, fetch record and replica in one unit
// (docs/storage.md "Write ordering"); a router that records what it was given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit } from '../src/store/group-commit.js';
import { seenKey } from '../src/store/keys.js';
import { seenStateOf } from '../src/seen/state.js';
import type { BatchOp } from '../src/store/db.js';
import { Completion } from '../src/crawl/completion.js';
import { decodeFetchRecord } from '../src/crawl/records.js';
import type { Replica } from '../src/crawl/router.js';
import type { Candidate } from '../src/crawl/candidate.js';
import { waitUntil } from './helpers.js';
import { pipelineRig, found, type PipelineRig } from './pipeline-fixtures.js';

function completion(r: PipelineRig, fatal: { err?: Error }) {
  const seen = { routed: [] as string[], replicated: [] as Replica[], order: [] as string[] };
  const done = new Completion({
    store: r.store, frontier: r.frontier, commits: new GroupCommit(r.store.db), recrawl: undefined,
    router: {
      route: async (cands: Candidate[]) => { seen.order.push('route'); seen.routed.push(...cands.map((c) => c.url)); await r.admission.submit(cands); },
      replicate: (_host: string, url: string, ops: BatchOp[]) => { seen.order.push('replicate'); ops.push({ type: 'put', sublevel: r.store.replicas, key: Buffer.from(url), value: Buffer.from('r') }); return [{ peer: 'next', n: 1, seq: 1 }]; },
      replicated: (rep: Replica) => { seen.order.push('replicated'); seen.replicated.push(rep); },
    },
    fatal: () => fatal.err, onFatal: (e) => { fatal.err ??= e; },
  });
  return { done, seen };
}

async function takeOne(r: PipelineRig, url: string) {
  const c = r.admission.candidate(url, undefined, 0)!;
  r.admission.asSeed(c);
  await r.admission.submit([c]);
  let h: ReturnType<typeof r.frontier.nextReady>;
  // The host's head loads from disk first (bounded wait).
  assert.ok(await waitUntil(() => (h = r.frontier.nextReady(Date.now())) !== undefined, 3000), 'the host is ready');
  const q = r.frontier.take(h!)!;
  h!.data.pendingAcks++;
  return { h: h!, q, key: seenKey(h!.key, q.url) };
}

test('completion: links are queued first, then the URL is settled as fetched with its record and its replica in one unit', async () => {
  const r = await pipelineRig();
  try {
    const fatal: { err?: Error } = {};
    const { done, seen } = completion(r, fatal);
    const { h, q, key } = await takeOne(r, 'http://seed.example/');
    const link = found(r, 'http://seed.example/next', q.url)!;
    await done.finish(q, h, [link], { url: q.url, at: 1, status: 200 });
    assert.deepEqual(seen.order, ['route', 'replicate', 'replicated']);
    assert.equal(seenStateOf((await r.store.seen.get(key))!), 'fetched');
    assert.equal(decodeFetchRecord(await r.store.fetches.get(key))?.status, 200);
    assert.ok(await r.store.replicas.get(Buffer.from(q.url)), 'the replica op went into the same unit');
    assert.equal(seenStateOf((await r.store.seen.get(link.key))!), 'queued', 'the link is durable');
    assert.equal(r.frontier.queued, 1, 'the page left the frontier, its link is in');
    assert.equal(h.data.pendingAcks, 0);
    assert.equal(fatal.err, undefined);
  } finally { await r.close(); }
});

test('completion: a URL settled elsewhere is not replicated; after a fatal error nothing more is acknowledged', async () => {
  const r = await pipelineRig();
  try {
    const fatal: { err?: Error } = {};
    const { done, seen } = completion(r, fatal);
    const a = await takeOne(r, 'http://a.example/');
    await done.finish(a.q, a.h, [], { url: a.q.url, at: 1, status: 0, failure: 'settled-elsewhere' });
    assert.equal(seenStateOf((await r.store.seen.get(a.key))!), 'settled-elsewhere');
    assert.deepEqual(seen.replicated, []);
    const b = await takeOne(r, 'http://b.example/');
    fatal.err = new Error('disk full: earlier write');
    await done.finish(b.q, b.h, [], { url: b.q.url, at: 1, status: 200 });
    assert.equal(seenStateOf((await r.store.seen.get(b.key))!), 'queued', 'not settled: it is fetched again at the next start');
    assert.equal(b.h.data.pendingAcks, 0);
  } finally { await r.close(); }
});
