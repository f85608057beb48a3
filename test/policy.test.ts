// The crawl policy document, its block list and its synchronisation between
// agents (src/policy/). The channel here is an in-process bus that delivers
// every published message to the other subscribers, as the gossip topic does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  activeBlocks, blockTargetOf, decodePolicy, emptyPolicy, encodePolicy, mergePolicies, parsePolicySummary, policySummary,
  withBlock, withoutBlock, withScope, withSeedUnits, type BlockRule, type PolicyDocument, type PolicyScope,
} from '../src/policy/document.js';
import { BlockList, urlPatternRegExp } from '../src/policy/blocklist.js';
import { PolicySync, POLICY_REPAIR_INTERVAL_MS, type PolicyChannel } from '../src/policy/sync.js';

const SCOPE: PolicyScope = { mode: 'seeds', allowHosts: [], include: [], exclude: [], maxDepth: 0, maxPagesPerHost: 0, acceptTypes: [] };
const quiet = { info: () => {}, warn: () => {} };

test('block arguments: a name is a domain, =name a host, a URL with * a pattern; junk is one clear error', () => {
  assert.deepEqual(blockTargetOf('Example.ORG'), { kind: 'domain', value: 'example.org' });
  assert.deepEqual(blockTargetOf('*.example.org'), { kind: 'domain', value: 'example.org' });
  assert.deepEqual(blockTargetOf('=www.example.org'), { kind: 'host', value: 'www.example.org' });
  assert.equal(blockTargetOf('bücher.example').value, 'xn--bcher-kva.example');
  assert.deepEqual(blockTargetOf('https://example.org/private/*'), { kind: 'url', value: 'https://example.org/private/*' });
  assert.throws(() => blockTargetOf('ftp://example.org/*'), /only http and https/);
  assert.throws(() => blockTargetOf('not a host'), /not a host name/);
  assert.throws(() => blockTargetOf('a.*.test'), /not a host name/);
  assert.throws(() => blockTargetOf('  '), /empty/);
});

test('block list: host rules match that host, domain rules every name under it, URL patterns anchored with * wildcards', () => {
  const rule = (arg: string, removed = false): BlockRule => ({ ...blockTargetOf(arg), rev: 1, removed, changedAt: 0, reason: '' });
  const list = new BlockList([
    rule('=www.a.test'), rule('b.test'), rule('http://c.test/private/*'), rule('http://d.test/x*.pdf'), rule('lifted.test', true),
  ]);
  assert.equal(list.size, 4, 'a tombstone is no rule');
  assert.equal(list.hostBlocked('lifted.test'), false);
  assert.equal(list.hostBlocked('www.a.test'), true);
  assert.equal(list.hostBlocked('a.test'), false);
  assert.equal(list.hostBlocked('b.test'), true);
  assert.equal(list.hostBlocked('deep.sub.b.test'), true);
  assert.equal(list.hostBlocked('notb.test'), false);
  assert.equal(list.blocked('http://c.test/private/1', 'c.test'), true);
  assert.equal(list.blocked('http://c.test/public/private/1', 'c.test'), false);
  assert.equal(list.hostBlocked('c.test'), false);
  assert.equal(list.blocked('http://d.test/x1.pdf', 'd.test'), true);
  assert.equal(list.blocked('http://d.test/x1.pdfs', 'd.test'), false);
  // Regex metacharacters in a pattern are literal.
  assert.equal(urlPatternRegExp('http://e.test/a+b(1)?.html').test('http://e.test/a+b(1)?.html'), true);
  assert.equal(urlPatternRegExp('http://e.test/a.b').test('http://e.test/aXb'), false);
});

test('documents: edits make the next version; same edit twice changes nothing; canonical bytes round-trip', () => {
  let doc = emptyPolicy(SCOPE);
  doc = withBlock(doc, blockTargetOf('b.test'), 10, 'complaint 1');
  assert.equal(doc.version, 1);
  assert.deepEqual(doc.blocks, [{ kind: 'domain', value: 'b.test', rev: 1, removed: false, changedAt: 10, reason: 'complaint 1' }]);
  assert.equal(withBlock(doc, blockTargetOf('b.test'), 11), doc, 'the rule is there: no new version');
  doc = withSeedUnits(doc, ['z.test', 'y.test'], 12);
  assert.equal(doc.version, 2);
  assert.equal(withSeedUnits(doc, ['y.test'], 13), doc);
  doc = withScope(doc, { ...SCOPE, mode: 'host', exclude: ['\\.pdf$'] }, 'peerA', 14);
  assert.equal(doc.version, 3);
  assert.equal(doc.scopeRev, 3);
  const back = decodePolicy(encodePolicy(doc));
  assert.ok(back.ok);
  assert.deepEqual(encodePolicy(back.doc), encodePolicy(doc));
  assert.equal(policySummary(back.doc), policySummary(doc));
  doc = withoutBlock(doc, { kind: 'domain', value: 'b.test' }, 15);
  assert.equal(activeBlocks(doc).length, 0);
  assert.equal(doc.blocks.length, 1, 'kept as a tombstone');
  assert.equal(doc.version, 4);
  assert.equal(withoutBlock(doc, { kind: 'domain', value: 'b.test' }, 16), doc);
  assert.deepEqual(parsePolicySummary(policySummary(doc))?.version, 4);
  assert.equal(parsePolicySummary('4.xyz'), null);
});

test('merge: commutative, associative, idempotent; a block and a concurrent unblock leave the rule blocked; scope last writer wins', () => {
  const base = withBlock(emptyPolicy(SCOPE), blockTargetOf('shared.test'), 1);
  const a = withSeedUnits(withBlock(base, blockTargetOf('a.test'), 2), ['a-seed.test'], 3);
  const b = withScope(withoutBlock(base, blockTargetOf('shared.test'), 2), { ...SCOPE, maxDepth: 3 }, 'B', 2);
  const c = withBlock(withoutBlock(base, blockTargetOf('shared.test'), 2), blockTargetOf('shared.test'), 3, 'again');
  const same = (x: PolicyDocument, y: PolicyDocument): void => assert.equal(policySummary(x), policySummary(y));
  same(mergePolicies(a, b), mergePolicies(b, a));
  same(mergePolicies(mergePolicies(a, b), c), mergePolicies(a, mergePolicies(b, c)));
  same(mergePolicies(a, a), a);
  const ab = mergePolicies(a, b);
  assert.equal(ab.version, 3);
  assert.deepEqual(activeBlocks(ab).map((r) => r.value), ['a.test'], 'the unblock at rev 2 is newer than the block at rev 1');
  assert.equal(ab.scope.maxDepth, 3);
  assert.deepEqual(ab.seedUnits, ['a-seed.test']);
  // Same rev, one side blocks and the other unblocks: blocked (the safe side of a takedown).
  const blockAt2 = withBlock(withoutBlock(withBlock(emptyPolicy(SCOPE), blockTargetOf('x.test'), 1), blockTargetOf('x.test'), 2), blockTargetOf('y.test'), 3);
  const lifted = withoutBlock(withBlock(emptyPolicy(SCOPE), blockTargetOf('x.test'), 1), blockTargetOf('x.test'), 2);
  const reblocked = withBlock(withBlock(emptyPolicy(SCOPE), blockTargetOf('z.test'), 1), blockTargetOf('x.test'), 2);
  assert.deepEqual(activeBlocks(mergePolicies(lifted, reblocked)).map((r) => r.value).sort(), ['x.test', 'z.test']);
  assert.ok(blockAt2.version > 0);
  // Equal documents digest equally whatever their set order.
  const swapped: PolicyDocument = { ...a, seedUnits: [...a.seedUnits].reverse(), blocks: [...a.blocks].reverse() };
  same(swapped, a);
});

test('documents from peers are checked: schema, sizes, regular expressions that compile', () => {
  const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o));
  const good = JSON.parse(new TextDecoder().decode(encodePolicy(withBlock(emptyPolicy(SCOPE), blockTargetOf('b.test'), 1))));
  assert.equal(decodePolicy(enc(good)).ok, true);
  const cases: [string, unknown, string][] = [
    ['not JSON', null, 'json'],
    ['wrong format version', { ...good, v: 2 }, 'version'],
    ['a bad mode', { ...good, scope: { ...good.scope, mode: 'galaxy' } }, 'schema'],
    ['a regex that does not compile', { ...good, scope: { ...good.scope, exclude: ['(unclosed'] } }, 'pattern'],
    ['a block of an unknown kind', { ...good, blocks: [{ kind: 'ip', value: '1.2.3.4', rev: 1, removed: false, changedAt: 0, reason: '' }] }, 'schema'],
    ['a domain with a space', { ...good, blocks: [{ kind: 'domain', value: 'a b', rev: 1, removed: false, changedAt: 0, reason: '' }] }, 'schema'],
    ['a rule from the future', { ...good, blocks: [{ ...good.blocks[0], rev: 9 }] }, 'schema'],
    ['one rule twice', { ...good, blocks: [good.blocks[0], good.blocks[0]] }, 'schema'],
    ['a negative version', { ...good, version: -1 }, 'schema'],
  ];
  for (const [what, doc, reason] of cases) {
    const bytes = doc === null ? new TextEncoder().encode('{nope') : enc(doc);
    const d = decodePolicy(bytes);
    assert.equal(d.ok, false, what);
    assert.equal(!d.ok && d.reason, reason, what);
  }
  assert.equal((decodePolicy(new Uint8Array(600 * 1024)) as { reason: string }).reason, 'oversize');
});

/** An in-process topic: publish reaches every other subscriber, after the publisher's call returns (as gossip does). */
class Bus {
  private readonly subs = new Map<string, (from: string, bytes: Uint8Array) => void>();
  blocked = new Set<string>();
  delivered = 0;
  channel(id: string): PolicyChannel {
    return {
      publish: async (bytes) => {
        if (this.blocked.has(id)) return;
        const copy = bytes.slice();
        queueMicrotask(() => {
          for (const [sid, h] of this.subs) if (sid !== id && !this.blocked.has(sid)) { this.delivered++; h(id, copy); }
        });
      },
      subscribe: (h) => { this.subs.set(id, h); return () => this.subs.delete(id); },
    };
  }
}

function memoryStore(): { load(): Promise<Uint8Array | undefined>; save(b: Uint8Array): Promise<void>; bytes?: Uint8Array } {
  const s: { bytes?: Uint8Array; load(): Promise<Uint8Array | undefined>; save(b: Uint8Array): Promise<void> } = {
    load: async () => s.bytes,
    save: async (b) => { s.bytes = b; },
  };
  return s;
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

test('sync: a change on one agent reaches the others; a late joiner gets it by asking after a heartbeat; restart keeps it', async () => {
  const bus = new Bus();
  let clock = 1_000;
  const now = (): number => clock;
  const stores = [memoryStore(), memoryStore(), memoryStore()];
  const agents = ['A', 'B', 'C'].map((id, i) => new PolicySync({ channel: bus.channel(id), persistence: stores[i]!, log: quiet, now, self: id }, emptyPolicy(SCOPE)));
  const changes: number[] = [];
  agents[1]!.onChange((doc) => changes.push(doc.version));
  agents[0]!.start();
  agents[1]!.start();
  await agents[0]!.change((d, _self, t) => withBlock(d, blockTargetOf('blocked.test'), t));
  await settle();
  assert.equal(agents[1]!.current.version, 1);
  assert.equal(agents[1]!.current.blocks[0]!.value, 'blocked.test');
  assert.deepEqual(changes, [1]);
  await agents[1]!.flushed();
  assert.ok(stores[1]!.bytes, 'the adopted policy is stored');

  // C joins later: it missed the publication; A's heartbeat tells it a newer policy exists.
  agents[2]!.start();
  assert.equal(agents[2]!.current.version, 0);
  agents[2]!.heard('A', agents[0]!.summary);
  await settle();
  await settle();
  assert.equal(agents[2]!.current.version, 1, 'the joiner asked and got it');
  assert.equal(agents[2]!.stats.requested, 1);

  // A restarted C loads it from its store before hearing anyone.
  const restarted = new PolicySync({ channel: null, persistence: stores[2]!, log: quiet, now, self: 'C' }, emptyPolicy(SCOPE));
  await agents[2]!.flushed();
  await restarted.load();
  assert.equal(restarted.current.version, 1);
  assert.equal(restarted.current.blocks[0]!.value, 'blocked.test');
  clock += POLICY_REPAIR_INTERVAL_MS;
});

test('sync: changes on both sides of a partition are all kept after healing', async () => {
  const bus = new Bus();
  let clock = 5_000;
  const now = (): number => clock;
  const a = new PolicySync({ channel: bus.channel('A'), persistence: memoryStore(), log: quiet, now, self: 'A' }, emptyPolicy(SCOPE));
  const b = new PolicySync({ channel: bus.channel('B'), persistence: memoryStore(), log: quiet, now, self: 'B' }, emptyPolicy(SCOPE));
  a.start();
  b.start();
  await a.change((d, _s, t) => withBlock(d, blockTargetOf('both.test'), t));
  await settle();
  assert.equal(b.current.version, 1);
  bus.blocked.add('B');
  await a.change((d, _s, t) => withBlock(d, blockTargetOf('one.test'), t));
  await b.change((d, _s, t) => withBlock(withoutBlock(d, blockTargetOf('both.test'), t), blockTargetOf('two.test'), t));
  await settle();
  assert.notEqual(a.summary, b.summary);
  bus.blocked.delete('B');
  clock += POLICY_REPAIR_INTERVAL_MS;
  // Heartbeats cross; each side publishes what the other lacks and the merges meet.
  a.heard('B', b.summary);
  b.heard('A', a.summary);
  for (let i = 0; i < 6; i++) await settle();
  assert.equal(a.summary, b.summary);
  assert.deepEqual(activeBlocks(a.current).map((r) => r.value).sort(), ['one.test', 'two.test']);
  assert.equal(a.current.blocks.find((r) => r.value === 'both.test')?.removed, true, 'the unblock made during the partition holds');
});

test('sync: a refused document from a peer changes nothing and is counted; repairs are rate limited', async () => {
  const bus = new Bus();
  let clock = 0;
  const a = new PolicySync({ channel: bus.channel('A'), persistence: memoryStore(), log: quiet, now: () => clock, self: 'A' }, emptyPolicy(SCOPE));
  a.start();
  const evil = bus.channel('E');
  await evil.publish(new Uint8Array([0x44, ...new TextEncoder().encode('{"v":1,"version":99}')]));
  await evil.publish(new Uint8Array([0x51]));
  await settle();
  assert.equal(a.current.version, 0);
  assert.equal(a.stats.refused.schema, 1);
  assert.equal(a.stats.refused.kind, 1);
  await a.change((d, _s, t) => withBlock(d, blockTargetOf('x.test'), t));
  const published = a.stats.published;
  for (let i = 0; i < 50; i++) a.heard('E', '0.0000000000000000');
  assert.equal(a.stats.published, published, 'no repair within the interval after a publication');
  clock += POLICY_REPAIR_INTERVAL_MS;
  for (let i = 0; i < 50; i++) a.heard('E', '0.0000000000000000');
  assert.equal(a.stats.published, published + 1, 'one repair per interval');
});

test('sync: a corrupt stored policy is counted and the options policy stays in force', async () => {
  const store = memoryStore();
  store.bytes = new TextEncoder().encode('{"truncated":');
  const warned: string[] = [];
  const initial = withScope(emptyPolicy(SCOPE), { ...SCOPE, mode: 'host' }, 'A', 1);
  const a = new PolicySync({ channel: null, persistence: store, log: { info: () => {}, warn: (_o, m) => warned.push(m) }, now: () => 0, self: 'A' }, initial);
  await a.load();
  assert.equal(a.current, initial);
  assert.equal(a.stats.refused['stored-json'], 1);
  assert.equal(warned.length, 1);
});
