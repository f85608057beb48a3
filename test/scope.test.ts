import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScopePolicy, DEFAULT_SCOPE_OPTIONS, SCOPE_REASONS, type ScopeReason } from '../src/scope/traps.js';
import { urlPattern, CountMin, hostHashes } from '../src/scope/pattern.js';
import { stripSessionIds, hasSessionId } from '../src/scope/session.js';
import { hasFarFutureDate } from '../src/scope/calendar.js';
import { prng } from '../bench/textgen.js';

const YEAR = 2025;
const policy = (o: Partial<typeof DEFAULT_SCOPE_OPTIONS> = {}): ScopePolicy => new ScopePolicy({ currentYear: YEAR, ...o });

test('DEFAULT_SCOPE_OPTIONS: documented defaults', () => {
  assert.equal(DEFAULT_SCOPE_OPTIONS.maxUrlLength, 2048);
  assert.equal(DEFAULT_SCOPE_OPTIONS.maxPathDepth, 16);
  assert.equal(DEFAULT_SCOPE_OPTIONS.maxSegmentRepeats, 2);
  assert.equal(DEFAULT_SCOPE_OPTIONS.sessionIds, 'strip');
  assert.deepEqual(DEFAULT_SCOPE_OPTIONS.schemes, ['http', 'https']);
  assert.equal(DEFAULT_SCOPE_OPTIONS.patternBudget, 1000);
  assert.equal(DEFAULT_SCOPE_OPTIONS.maxLinksPerPage, 1000);
  assert.equal(new ScopePolicy().maxLinksPerPage, 1000);
  assert.equal(new ScopePolicy({ maxLinksPerPage: 50 }).maxLinksPerPage, 50);
  assert.ok(Object.isFrozen(DEFAULT_SCOPE_OPTIONS));
});

test('scheme: only allowed schemes', () => {
  const p = policy();
  assert.equal(p.check('http://a.example/', 'a.example'), null);
  assert.equal(p.check('https://a.example/x', 'a.example'), null);
  for (const u of ['ftp://a.example/f', 'mailto:x@a.example', 'javascript:void(0)', 'data:text/html,x', 'httpx://a.example/', 'http:']) {
    assert.equal(p.check(u, 'a.example'), 'scheme', u);
  }
  assert.equal(policy({ schemes: ['https'] }).check('http://a.example/', 'a.example'), 'scheme');
  assert.equal(p.counts().scheme, 6);
});

test('maximum URL length', () => {
  const p = policy();
  const base = 'http://a.example/';
  assert.equal(p.check(base + 'x'.repeat(2048 - base.length), 'a.example'), null);
  assert.equal(p.check(base + 'x'.repeat(2049 - base.length), 'a.example'), 'too-long');
  assert.equal(policy({ maxUrlLength: 30 }).check('http://a.example/0123456789abcdef', 'a.example'), 'too-long');
});

test('maximum path depth (empty segments count, a trailing slash does not)', () => {
  const p = policy({ maxPathDepth: 4 });
  assert.equal(p.check('http://a.example/1/2/3/4', 'a.example'), null);
  assert.equal(p.check('http://a.example/1/2/3/4/', 'a.example'), null);
  assert.equal(p.check('http://a.example/1/2/3/4/5', 'a.example'), 'too-deep');
  assert.equal(p.check('http://a.example/1//2/3/4', 'a.example'), 'too-deep');
  assert.equal(p.check('http://a.example/1/2/3/4?q=/5/6/7', 'a.example'), null); // the query is not path
  assert.equal(p.check('http://a.example//////////', 'a.example'), 'too-deep');
  assert.equal(policy().check('http://a.example/' + Array.from({ length: 16 }, (_, i) => `d${i}`).join('/') + '/', 'a.example'), null);
  assert.equal(policy().check('http://a.example/' + Array.from({ length: 17 }, (_, i) => `d${i}`).join('/'), 'a.example'), 'too-deep');
});

test('repeating path segments (/a/b/a/b/a/b)', () => {
  const p = policy();
  assert.equal(p.check('http://a.example/a/b/a/b/a/b', 'a.example'), 'repeating-segments');
  assert.equal(p.check('http://a.example/x/img/y/img/z/img/', 'a.example'), 'repeating-segments');
  assert.equal(p.check('http://a.example/a/b/a/b', 'a.example'), null);
  assert.equal(p.check('http://a.example/2024/01/01/story', 'a.example'), null);
  assert.equal(p.check('http://a.example/ab/a/ab/a/abc', 'a.example'), null); // prefixes are not repeats
  assert.equal(policy({ maxSegmentRepeats: 1 }).check('http://a.example/a/b/a', 'a.example'), 'repeating-segments');
  assert.equal(p.counts()['repeating-segments'], 2);
});

test('far-future calendar paths and queries', () => {
  const p = policy(); // current year 2025, N = 2: years after 2027 are traps
  const trap = [
    'http://a.example/cal/2028/05/17',
    'http://a.example/cal/2099/05',
    'http://a.example/cal/2099/5/17',
    'http://a.example/events/2030-01-01/',
    'http://a.example/day_2099_12_31.html',
    'http://a.example/calendar?date=2099-01-01',
    'http://a.example/calendar?view=month&year=2099',
    'http://a.example/c?month=209905',
    'http://a.example/c?ymd=20991231',
    'http://a.example/events/2099',
    'http://a.example/archive/209912/',
  ];
  for (const u of trap) assert.equal(p.check(u, 'a.example'), 'calendar-trap', u);
  const ok = [
    'http://a.example/cal/2027/12/31',
    'http://a.example/cal/2025/05/17',
    'http://a.example/product/2500',
    'http://a.example/item/2500/3',
    'http://a.example/p?id=20991231',
    'http://a.example/v2099/05',
    'http://a.example/models/2099x/05',
    'http://a.example/cal/1999/05/17',
    'http://a.example/events/20991',
    'http://a.example/calendar?date=2026-01-01',
    'http://a.example/page?year=2025',
    'http://a.example/search?q=x&start=3000',
    'http://a.example/map?x=1200&y=3000',
  ];
  for (const u of ok) assert.equal(p.check(u, 'a.example'), null, u);
  assert.equal(p.counts()['calendar-trap'], trap.length);
  // N is configurable.
  assert.equal(policy({ calendarYearsAhead: 0 }).check('http://a.example/cal/2026/05', 'a.example'), 'calendar-trap');
  assert.equal(hasFarFutureDate('http://a.example/cal/2026/05#2099/01', 17, 2025), true);
  assert.equal(hasFarFutureDate('http://a.example/x#2099/01', 17, 2025), false); // fragments are ignored
});

test('session ids: stripped by rewrite() (default), rejected in reject mode', () => {
  const p = policy();
  const cases: Array<[string, string]> = [
    ['http://a.example/x;jsessionid=ABC123DEF?x=1', 'http://a.example/x?x=1'],
    ['http://a.example/x?PHPSESSID=abc123&b=2', 'http://a.example/x?b=2'],
    ['http://a.example/x?b=2&PHPSESSID=abc123', 'http://a.example/x?b=2'],
    ['http://a.example/x?sessionid=9', 'http://a.example/x'],
    ['http://a.example/p?ASPSESSIONIDQADCSBQR=KJHGF&x=1', 'http://a.example/p?x=1'],
    ['http://a.example/(S(lit3py55t21z5v55vlm25s55))/page.aspx?q=1', 'http://a.example/page.aspx?q=1'],
    ['http://a.example/(S(lit3py55t21z5v55vlm25s55))', 'http://a.example/'],
    ['http://a.example/p?sid=a8f3c9d2e1b0477f9a2c&x=1', 'http://a.example/p?x=1'],
  ];
  for (const [dirty, clean] of cases) {
    assert.equal(hasSessionId(dirty), true, dirty);
    const rewritten = p.rewrite(dirty);
    assert.equal(rewritten, clean);
    assert.equal(stripSessionIds(dirty), clean);
    assert.equal(p.check(rewritten, 'a.example'), null);
    assert.equal(p.check(dirty, 'a.example'), 'session-id'); // not rewritten: never accepted as is
  }
  assert.equal(p.sessionIdsStripped, cases.length);
  // Ambiguous names with content values are left alone.
  for (const u of ['http://a.example/story?sid=12345', 'http://a.example/?s=internationalization', 'http://a.example/a?session=2&track=b']) {
    assert.equal(hasSessionId(u), false, u);
    assert.equal(p.rewrite(u), u);
    assert.equal(p.check(u, 'a.example'), null);
  }
  const r = policy({ sessionIds: 'reject' });
  assert.equal(r.rewrite(cases[0][0]), cases[0][0]);
  assert.equal(r.check(r.rewrite(cases[0][0]), 'a.example'), 'session-id');
  assert.equal(r.counts()['session-id'], 1);
  // Custom names.
  const c = policy({ sessionIdParams: ['mysess'] });
  assert.equal(c.rewrite('http://a.example/?MySess=1&a=2'), 'http://a.example/?a=2');
  assert.equal(c.rewrite('http://a.example/?jsessionid=1'), 'http://a.example/?jsessionid=1');
});

test('host and domain scope patterns', () => {
  const inc = policy({ includeHosts: ['*.example.com', 'exact.org'] });
  assert.equal(inc.check('http://a.example.com/', 'a.example.com'), null);
  assert.equal(inc.check('http://x.y.example.com/', 'x.y.example.com'), null);
  assert.equal(inc.check('http://example.com/', 'example.com'), 'out-of-scope'); // *.x is subdomains only
  assert.equal(inc.check('http://exact.org/', 'exact.org'), null);
  assert.equal(inc.check('http://www.exact.org/', 'www.exact.org'), 'out-of-scope');
  assert.equal(inc.check('http://badexample.com/', 'badexample.com'), 'out-of-scope');
  assert.equal(inc.check('http://a.example.com:8080/', 'a.example.com:8080'), null); // port ignored
  const dom = policy({ domains: ['example.org'], excludeHosts: ['ads.example.org'] });
  assert.equal(dom.check('http://example.org/', 'example.org'), null);
  assert.equal(dom.check('http://www.example.org/', 'WWW.Example.org'), null);
  assert.equal(dom.check('http://ads.example.org/', 'ads.example.org'), 'out-of-scope');
  assert.equal(dom.check('http://example.net/', 'example.net'), 'out-of-scope');
  const exc = policy({ excludeHosts: ['*.tracker.net'] });
  assert.equal(exc.check('http://t1.tracker.net/', 't1.tracker.net'), 'out-of-scope');
  assert.equal(exc.check('http://anything.else/', 'anything.else'), null);
  assert.equal(dom.counts()['out-of-scope'], 2);
});

test('per-host page budget', () => {
  const p = policy({ hostBudget: 5 });
  for (let i = 0; i < 5; i++) assert.equal(p.check(`http://a.example/page-${'abcde'[i]}`, 'a.example'), null);
  assert.equal(p.check('http://a.example/page-f', 'a.example'), 'host-budget');
  assert.equal(p.check('http://b.example/page-f', 'b.example'), null);
  assert.equal(p.counts()['host-budget'], 1);
  assert.equal(p.accepted, 6);
  // Infinity turns the host budget off.
  const q = policy({ hostBudget: Infinity, patternBudget: Infinity });
  for (let i = 0; i < 3000; i++) assert.equal(q.check(`http://a.example/p/${i}`, 'a.example'), null);
});

test('pattern budget cuts an endless calendar while the host\'s other pages keep flowing', () => {
  const p = policy({ patternBudget: 200, calendarYearsAhead: 2 });
  const host = 'events.example';
  // A calendar that starts in the past and links day after day (never reaching a far-future year here).
  const day = new Date(Date.UTC(2019, 0, 1));
  const next = (): string => {
    const u = `http://${host}/cal/${day.getUTCFullYear()}/${String(day.getUTCMonth() + 1).padStart(2, '0')}/${String(day.getUTCDate()).padStart(2, '0')}`;
    day.setUTCDate(day.getUTCDate() + 1);
    return u;
  };
  let accepted = 0, cut = 0, ordinary = 0;
  for (let i = 0; i < 2000; i++) {
    const v = p.check(next(), host);
    if (v === null) accepted++;
    else { assert.equal(v, 'pattern-budget'); cut++; }
    // Interleaved ordinary pages of the same host are still accepted.
    if (i % 10 === 0) {
      assert.equal(p.check(`http://${host}/articles/story-${i.toString(36)}-${'xyz'[i % 3]}`, host), null);
      ordinary++;
    }
  }
  assert.equal(accepted, 200);
  assert.equal(cut, 1800);
  assert.equal(ordinary, 200);
  assert.equal(p.counts()['pattern-budget'], 1800);
  // A pager on the same host has its own budget; a calendar on another host too.
  for (let i = 1; i <= 200; i++) assert.equal(p.check(`http://${host}/list?page=${i}`, host), null);
  assert.equal(p.check(`http://${host}/list?page=201`, host), 'pattern-budget');
  assert.equal(p.check('http://other.example/cal/2019/01/01', 'other.example'), null);
  assert.equal(p.usage(`http://${host}/cal/2030/01/01`, host).pattern, 200);
  assert.equal(p.usage(`http://${host}/cal/2030/01/01`, host).patternKey, `${host}/cal/#/#/#`);
});

test('budgets are charged only when accepting; checkStatic never charges; admit charges once', () => {
  const p = policy({ patternBudget: 3, hostBudget: 10 });
  const host = 'a.example';
  // Rejected for static reasons: no budget used.
  for (let i = 0; i < 50; i++) assert.equal(p.check(`http://${host}/cal/2099/01/${(i % 28) + 1}`, host), 'calendar-trap');
  assert.equal(p.usage(`http://${host}/x`, host).host, 0);
  assert.equal(p.checkStatic(`http://${host}/n/1`, host), null);
  assert.equal(p.usage(`http://${host}/n/1`, host).pattern, 0);
  assert.equal(p.admit(`http://${host}/n/1`, host), null);
  assert.equal(p.admit(`http://${host}/n/2`, host), null);
  assert.equal(p.admit(`http://${host}/n/3`, host), null);
  assert.equal(p.admit(`http://${host}/n/4`, host), 'pattern-budget');
  assert.equal(p.admit(`http://${host}/n/5`, host), 'pattern-budget');
  // Budget rejections do not charge the host budget either.
  assert.equal(p.usage(`http://${host}/x`, host).host, 3);
  assert.equal(p.accepted, 3);
});

test('urlPattern: digit runs and hex runs abstracted', () => {
  assert.equal(urlPattern('http://h.example/cal/2024/05/17?page=3', 'h.example'), 'h.example/cal/#/#/#?page=#');
  assert.equal(urlPattern('http://h.example/item/5f3e9a0c', 'h.example'), 'h.example/item/#');
  assert.equal(urlPattern('http://h.example/u/550e8400-e29b-41d4-a716-446655440000', 'h.example'), 'h.example/u/#-#-#-#-#');
  assert.equal(urlPattern('http://h.example/page3/cafe/beef', 'h.example'), 'h.example/page#/cafe/beef');
  assert.equal(urlPattern('http://h.example/2019/05/a-title', 'h.example'), 'h.example/#/#/a-title');
  assert.equal(urlPattern('http://h.example/s?q=%E4%B8%AD#frag', 'h.example'), 'h.example/s?q=%#%#%AD');
  assert.equal(urlPattern('http://h.example', 'h.example'), 'h.example');
});

test('memory bounded: count-min counters never underestimate, fixed size whatever the key count', () => {
  const cm = new CountMin(1024);
  assert.equal(cm.slots, 1024);
  const truth = new Map<string, number>();
  const r = prng(5);
  const h = new Uint32Array(2);
  for (let i = 0; i < 100000; i++) {
    const key = `k${Math.floor(Math.pow(r(), 3) * 20000)}`;
    truth.set(key, (truth.get(key) ?? 0) + 1);
    hostHashes(key, h);
    cm.increment(h[0], h[1]);
  }
  let exact = 0;
  for (const [key, n] of truth) {
    hostHashes(key, h);
    const est = cm.estimate(h[0], h[1]);
    assert.ok(est >= n);
    if (est === n) exact++;
  }
  assert.ok(truth.size > 10000);
  assert.ok(exact > 0);
  // A policy's counters are fixed-size typed arrays: 2 tables × 2 rows × slots.
  const p = policy({ counterSlots: 4096 });
  for (let i = 0; i < 20000; i++) p.check(`http://h${i}.example/p${i}/x${i}`, `h${i}.example`);
  assert.equal(p.snapshot().length, 2 * 2 * 4096);
});

test('snapshot / restore carry budgets across restarts', () => {
  const p = policy({ patternBudget: 2, counterSlots: 256 });
  p.check('http://a.example/n/1', 'a.example');
  p.check('http://a.example/n/2', 'a.example');
  const q = policy({ patternBudget: 2, counterSlots: 256 });
  assert.equal(q.restore(p.snapshot()), true);
  assert.equal(q.check('http://a.example/n/3', 'a.example'), 'pattern-budget');
  assert.equal(policy({ counterSlots: 512 }).restore(p.snapshot()), false);
});

test('counts() covers every reason; noteLinkCap counts links over the per-page cap', () => {
  const p = policy({ maxLinksPerPage: 3 });
  const links = ['http://a.example/1', 'http://a.example/2', 'http://a.example/3', 'http://a.example/4', 'http://a.example/5'];
  const kept = links.slice(0, p.maxLinksPerPage);
  p.noteLinkCap(links.length - kept.length);
  p.noteLinkCap(0);
  p.noteLinkCap(Number.NaN);
  const c = p.counts();
  assert.deepEqual(Object.keys(c).sort(), [...SCOPE_REASONS].sort());
  assert.equal(c['link-cap'], 2);
  for (const r of SCOPE_REASONS) if (r !== 'link-cap') assert.equal(c[r as ScopeReason], 0);
});

test('bad input never throws', () => {
  const p = policy();
  for (const u of ['', ':', '://', 'http://', 'http:///', 'http://a.example/%', 'http://[::1', '\u0000', 'x'.repeat(5000)]) {
    assert.doesNotThrow(() => p.check(u, 'a.example'));
    assert.doesNotThrow(() => p.rewrite(u));
  }
  assert.equal(p.check(undefined as unknown as string, 'a.example'), 'scheme');
  // Hostile but within the length limit: many session-like parameters; linear-time patterns keep it fast.
  const hostile = 'http://a.example/p?' + '&sid=a1b2c3d4e5f6a7b8c9'.repeat(85);
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) p.check(p.rewrite(hostile), 'a.example');
  // A bound for a blow-up (a backtracking pattern would take minutes), not a speed goal.
  assert.ok(performance.now() - t0 < 5000, 'hostile URL handled quickly');
  assert.equal(p.rewrite(hostile), 'http://a.example/p');
  assert.equal(p.check('http://[::1]:8080/x', '[::1]:8080'), null);
});
