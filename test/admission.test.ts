// Admission (src/crawl/admission.ts) built alone: candidate → normalise → scope
// → seen-set, on a real store and frontier (docs/scope.md, docs/storage.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seenStateOf, queuedAt } from '../src/seen/state.js';
import { pipelineRig, found } from './pipeline-fixtures.js';

test('admission: a new URL is normalised and queued with its seen entry pointing at its frontier entry; a repeat is not queued again', async () => {
  const r = await pipelineRig();
  try {
    const seed = r.admission.candidate('HTTP://Seed.Example:80/a/../index.html#top', undefined, 0)!;
    assert.equal(seed.url, 'http://seed.example/index.html', 'normalised (RFC 3986 §6)');
    r.admission.asSeed(seed);
    await r.admission.submit([seed]);
    assert.equal(r.frontier.queued, 1);
    const value = await r.store.seen.get(seed.key);
    assert.equal(seenStateOf(value!), 'queued');
    const fk = queuedAt(seed.key, value!)!;
    assert.ok(await r.store.frontier.get(fk), 'the seen value names the frontier entry written in the same batch');
    await r.admission.submit([r.admission.candidate('http://seed.example/index.html', undefined, 0)!]);
    assert.equal(r.frontier.queued, 1, 'seen already: not queued twice');
    assert.equal(r.stats.urlsDiscovered, 1);
  } finally { await r.close(); }
});

test('admission: links outside the seeds\' registrable domain and unparsable ones are refused and counted; a peer\'s seed widens the scope', async () => {
  const r = await pipelineRig();
  try {
    r.admission.asSeed(r.admission.candidate('http://www.seed.example/', undefined, 0)!);
    assert.ok(found(r, 'http://blog.seed.example/post', 'http://www.seed.example/'), 'same registrable domain');
    assert.equal(found(r, 'http://other.example/', 'http://www.seed.example/'), null);
    assert.equal(r.admission.candidate('mailto:someone@seed.example', undefined, 1), null);
    assert.equal(r.stats.rejected['out-of-scope'], 1);
    assert.equal(r.stats.rejected['invalid-url'], 1);
    // A URL another agent sends at depth 0 is a seed: its domain is in scope from now on.
    const peerSeed = r.admission.candidate('http://other.example/', undefined, 0)!;
    assert.equal(r.admission.followsFromPeer(peerSeed), true);
    assert.ok(found(r, 'http://other.example/next', 'http://other.example/'));
  } finally { await r.close(); }
});

test('admission: the depth limit holds for links and for URLs from peers', async () => {
  const r = await pipelineRig((c) => { c.crawlScope.maxDepth = 1; });
  try {
    r.admission.asSeed(r.admission.candidate('http://seed.example/', undefined, 0)!);
    assert.ok(found(r, 'http://seed.example/one', 'http://seed.example/', 1));
    assert.equal(found(r, 'http://seed.example/two', 'http://seed.example/one', 2), null);
    assert.equal(r.admission.followsFromPeer(r.admission.candidate('http://seed.example/three', undefined, 2)!), false);
    assert.equal(r.stats.rejected['max-depth'], 2);
  } finally { await r.close(); }
});
