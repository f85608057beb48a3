// SimHash on the fingerprint thread (src/dedup/fingerprinter.ts) must give the
// same fingerprints as the parser's inline path, and hand back (null) what
// only the inline path can take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractPage } from '../src/parse/html.js';
import { Fingerprinter } from '../src/dedup/fingerprinter.js';
import { seededRandom } from './helpers.js';

const words = ['crawler', 'frontier', 'politeness', 'robots', 'sitemap', 'archive', 'shingle', 'Ωμέγα', 'Привет', '東京', 'straße', 'naïve', 'café'];

function page(rnd: () => number, n: number, extra = ''): string {
  const body: string[] = [];
  for (let i = 0; i < n; i++) {
    const w = words[Math.floor(rnd() * words.length)]!;
    body.push(i % 17 === 0 ? `<p>${w} &amp; <b>${w}</b>` : i % 29 === 0 ? `&#x1F600;${w}` : w);
  }
  return `<html><head><title>t</title><script>var x = "not text";</script></head><body><nav>home about</nav>${body.join(' ')}${extra}</body></html>`;
}

const opts = (fingerprintLater: boolean) => ({ url: 'http://fp.test/a', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', wantFingerprint: true, fingerprintLater });

test('fingerprint thread: same SimHash as the inline path, pages posted together or alone', async () => {
  const fpr = new Fingerprinter();
  try {
    const rnd = seededRandom(7);
    const pages = Array.from({ length: 40 }, (_, i) => page(rnd, 50 + i * 40));
    const inline = pages.map((html) => extractPage(Buffer.from(html), opts(false)).fingerprint);
    // All at once (one message), then one at a time.
    const jobs = pages.map((html) => extractPage(Buffer.from(html), opts(true)));
    for (const p of jobs) { assert.equal(p.fingerprint, undefined); assert.ok(p.fingerprintJob, 'a job, not a fingerprint'); }
    const together = await Promise.all(jobs.map((p) => fpr.fingerprint(p.fingerprintJob!)));
    assert.deepEqual(together, inline);
    // Jobs are consumed (their pieces move to the thread): fresh ones, one at a time.
    for (let i = 0; i < 5; i++) assert.equal(await fpr.fingerprint(extractPage(Buffer.from(pages[i]!), opts(true)).fingerprintJob!), inline[i]);
    // A job whose pieces already moved is declined, not misread.
    assert.equal(await fpr.fingerprint(jobs[0]!.fingerprintJob!), null);
    assert.equal(fpr.stats.offloaded, 45);
    assert.equal(fpr.stats.inline, 1);
  } finally {
    await fpr.close();
  }
});

test('fingerprint thread: the same fingerprint as inline for pages the parser decoded from windows-1252 and behind a BOM', async () => {
  const fpr = new Fingerprinter();
  try {
    const latin = Buffer.from(`<html><body>${'caf\xe9 na\xefve r\xe9sum\xe9 '.repeat(50)}</body></html>`, 'latin1');
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(page(seededRandom(11), 300))]);
    for (const [body, ct] of [[latin, 'text/html; charset=windows-1252'], [bom, 'text/html']] as const) {
      const o = { url: 'http://fp.test/b', contentType: ct, robotsToken: 'ubicrawl', wantFingerprint: true };
      const inline = extractPage(body, o).fingerprint!;
      assert.notEqual(inline, 0n);
      assert.equal(await fpr.fingerprint(extractPage(body, { ...o, fingerprintLater: true }).fingerprintJob!), inline);
    }
  } finally {
    await fpr.close();
  }
});

test('fingerprint thread: a text that needs the reference path comes back null; the inline path then gives the fingerprint', async () => {
  const fpr = new Fingerprinter();
  try {
    // U+0130 lower-cases to two code units: simhashPieces leaves such a text to simhash64.
    const html = page(seededRandom(3), 200, ' İstanbul İzmir');
    const job = extractPage(Buffer.from(html), opts(true)).fingerprintJob!;
    assert.equal(await fpr.fingerprint(job), null);
    assert.equal(fpr.stats.inline, 1);
    const fp = extractPage(Buffer.from(html), opts(false)).fingerprint!;
    assert.notEqual(fp, 0n);
  } finally {
    await fpr.close();
  }
});

test('fingerprint thread: after close every job is handed back, nothing hangs', async () => {
  const fpr = new Fingerprinter();
  const job = extractPage(Buffer.from(page(seededRandom(5), 100)), opts(true)).fingerprintJob!;
  assert.equal(fpr.available, true);
  const before = fpr.fingerprint(job);
  await fpr.close();
  assert.equal(fpr.available, false, 'callers fingerprint inline from now on');
  assert.ok((await before) === null || typeof (await before) === 'bigint');
  assert.equal(await fpr.fingerprint(job), null);
});

test('fingerprint thread: the first inlineFirst pages are fingerprinted by the parser (no thread), the later ones by the thread, with the same result', async () => {
  const fpr = new Fingerprinter(2);
  try {
    const html = page(seededRandom(7), 150);
    assert.deepEqual([fpr.wantsJob(), fpr.wantsJob()], [false, false], 'the first two pages: inline');
    assert.equal(fpr.stats.offloaded + fpr.stats.inline, 0, 'no job made for them');
    assert.equal(fpr.wantsJob(), true, 'from the third page on: jobs for the thread');
    const offloaded = await fpr.fingerprint(extractPage(Buffer.from(html), opts(true)).fingerprintJob!);
    assert.equal(offloaded, extractPage(Buffer.from(html), opts(false)).fingerprint);
    assert.equal(fpr.stats.offloaded, 1);
    await fpr.close();
    assert.equal(fpr.wantsJob(), false, 'closed: inline again');
  } finally {
    await fpr.close();
  }
});
