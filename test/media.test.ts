// Media, opt-in (docs/media.md): the parser's media URLs, the option syntax, and
// a crawl against a loopback server — `--media images` archives each image of a
// page once (an oversize one kept truncated at its cap, WARC-Truncated: length),
// without the option none is requested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { extractPage } from '../src/parse/html.js';
import { M_AUDIO, M_IMAGES, M_PDF, M_VIDEO, acceptWithMedia, parseMediaBytes, parseMediaKinds, srcsetUrls } from '../src/parse/media.js';
import { DEFAULT_MEDIA_MAX_BYTES, parseResolveRule } from '../src/config.js';
import { startAgent } from '../src/crawl/agent.js';
import { readWarc } from '../src/warc/reader.js';
import { tempDir } from './helpers.js';

const PAGE = `<!doctype html><html><head><title>media</title></head><body>
<a href="/next">next page</a>
<img src="/i1.png" alt="one">
<img src="/i2.png" srcset="/i3.png 2x, /i4.png 480w">
<picture><source srcset="/i5.webp" type="image/webp"><source srcset="/i6.png 1x,/i7.png 2x"><img src="/i8.png"></picture>
<img src="/i1.png">
<img src="/big.png">
<video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm"></video>
<audio><source src="/a.mp3"></audio>
<embed src="/doc.pdf"><object data="/o.svg" type="image/svg+xml"></object>
<a href="/paper.pdf">paper</a>
</body></html>`;

const IMAGES = ['/i1.png', '/i2.png', '/i3.png', '/i4.png', '/i5.webp', '/i6.png', '/i7.png', '/i8.png', '/big.png', '/poster.jpg', '/o.svg'];

function paths(links: { url: string }[]): string[] {
  return links.map((l) => new URL(l.url).pathname);
}

test('the parser: media URLs of the kinds asked for, none without the option', () => {
  const opts = { url: 'http://m.test/', contentType: 'text/html', robotsToken: 'ubicrawl' };
  const off = extractPage(Buffer.from(PAGE), opts);
  assert.deepEqual(paths(off.links), ['/next', '/paper.pdf'], 'pages only');
  assert.ok(off.links.every((l) => l.media === undefined));

  const images = extractPage(Buffer.from(PAGE), { ...opts, media: M_IMAGES });
  const media = images.links.filter((l) => l.media === 'images');
  assert.deepEqual(paths(media).sort(), [...IMAGES].sort(), 'img src and srcset, picture sources, the video poster, an object of an image type; each once');
  assert.equal(media.find((l) => l.url.endsWith('/i5.webp'))?.tag, 'source');
  assert.equal(images.links.find((l) => l.url.endsWith('/paper.pdf'))?.media, undefined, 'a PDF only with pdf');

  const all = extractPage(Buffer.from(PAGE), { ...opts, media: M_IMAGES | M_PDF | M_VIDEO | M_AUDIO });
  const kindOf = (p: string) => all.links.find((l) => new URL(l.url).pathname === p)?.media;
  assert.equal(kindOf('/v.mp4'), 'video');
  assert.equal(kindOf('/v.webm'), 'video');
  assert.equal(kindOf('/a.mp3'), 'audio');
  assert.equal(kindOf('/doc.pdf'), 'pdf', 'embed by extension');
  assert.equal(kindOf('/paper.pdf'), 'pdf', 'a link to a PDF');
  assert.equal(kindOf('/next'), undefined);
});

test('srcset candidates and the option syntax', () => {
  assert.deepEqual(srcsetUrls('a.png 1x, b.png 2x'), ['a.png', 'b.png']);
  assert.deepEqual(srcsetUrls('a.png,b.png 2x'), ['a.png,b.png'], 'a comma inside a URL stays (HTML §4.8.4.3.5)');
  assert.deepEqual(srcsetUrls('a.png, b.png'), ['a.png', 'b.png']);
  assert.deepEqual(srcsetUrls(' x.png 100w (max-width: 3px), y.png'), ['x.png', 'y.png']);
  assert.deepEqual(parseMediaKinds('images,pdf, video'), ['images', 'pdf', 'video']);
  assert.throws(() => parseMediaKinds('images,flash'), /--media takes a comma-separated list/);
  assert.deepEqual(parseMediaBytes('images=1MB,pdf=2GB', DEFAULT_MEDIA_MAX_BYTES), { ...DEFAULT_MEDIA_MAX_BYTES, images: 1024 ** 2, pdf: 2 * 1024 ** 3 });
  assert.deepEqual(parseMediaBytes('20MB', DEFAULT_MEDIA_MAX_BYTES), { images: 20 * 1024 ** 2, pdf: 20 * 1024 ** 2, video: 20 * 1024 ** 2, audio: 20 * 1024 ** 2 });
  assert.throws(() => parseMediaBytes('images=lots', DEFAULT_MEDIA_MAX_BYTES), /not a size/);
  assert.deepEqual(acceptWithMedia(['text/html'], { kinds: ['images'], maxBytes: DEFAULT_MEDIA_MAX_BYTES }), ['text/html', 'image/*']);
  assert.deepEqual(acceptWithMedia([], { kinds: ['images'], maxBytes: DEFAULT_MEDIA_MAX_BYTES }), [], 'all accepted already');
});

/** A site with the page above, images of 2 KB (big.png: 64 KB), and a log of what was asked. */
async function startSite(): Promise<{ port: number; log: string[]; close(): Promise<void> }> {
  const log: string[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    log.push(path);
    if (path === '/robots.txt') { res.writeHead(404); res.end(); return; }
    if (path === '/' || path === '/next') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(path === '/' ? PAGE : '<p>next</p>'); return; }
    const ext = path.slice(path.lastIndexOf('.') + 1);
    const type = ext === 'png' ? 'image/png' : ext === 'webp' ? 'image/webp' : ext === 'jpg' ? 'image/jpeg' : ext === 'svg' ? 'image/svg+xml' : ext === 'pdf' ? 'application/pdf' : 'application/octet-stream';
    const size = path === '/big.png' ? 64 * 1024 : 2048;
    res.writeHead(200, { 'content-type': type, 'content-length': String(size) });
    res.end(Buffer.alloc(size, path.charCodeAt(2)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, log, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

test('--media images: each image of img, srcset and picture archived once, the oversize one truncated at its cap; without it none is requested', async () => {
  const site = await startSite();
  try {
    const crawl = async (media: boolean) => {
      const dir = tempDir();
      const agent = await startAgent({
        dataDir: dir, seeds: [`http://m.test:${site.port}/`], untilIdle: true, minDelayMs: 0, delayFactor: 0, concurrency: 4,
        resolve: [parseResolveRule(`m.test:${site.port}:127.0.0.1`)], logLevel: 'silent', sitemaps: { enabled: false },
        // A type filter that would refuse images: kinds asked for with --media are accepted all the same.
        crawlScope: { acceptTypes: ['text/html'] } as never,
        ...(media ? { media: { kinds: ['images'], maxBytes: { ...DEFAULT_MEDIA_MAX_BYTES, images: 16 * 1024 } } } : {}),
      });
      return { summary: await agent.done, dir };
    };

    const without = await crawl(false);
    assert.deepEqual(site.log.filter((p) => !['/', '/next', '/robots.txt', '/paper.pdf'].includes(p)), [], 'no media requested without --media');
    assert.deepEqual(without.summary.media, {});

    site.log.length = 0;
    const { summary, dir } = await crawl(true);
    for (const img of IMAGES) assert.equal(site.log.filter((p) => p === img).length, 1, `${img} requested once`);
    assert.ok(!site.log.includes('/v.mp4') && !site.log.includes('/a.mp3') && !site.log.includes('/doc.pdf'), 'other kinds not asked for');
    assert.equal(summary.media.images, IMAGES.length);
    assert.equal(summary.media.truncated, 1);
    assert.equal(summary.skipped['type-not-accepted'] ?? 0, 1, 'only the PDF linked as a page is refused by --accept-type');

    const records = new Map<string, { truncated?: string; bytes: number }>();
    const warcDir = join(dir, 'warc');
    for (const f of readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz'))) {
      for await (const rec of readWarc(join(warcDir, f))) {
        if (rec.type !== 'response') continue;
        const p = new URL(rec.headers['WARC-Target-URI']!).pathname;
        assert.ok(!records.has(p), `${p} archived once`);
        records.set(p, { truncated: rec.headers['WARC-Truncated'], bytes: rec.payload?.length ?? 0 });
      }
    }
    for (const img of IMAGES) assert.ok(records.has(img), `${img} archived`);
    assert.deepEqual(records.get('/big.png'), { truncated: 'length', bytes: 16 * 1024 }, 'kept up to its cap, marked per WARC 1.1 §5.13');
    assert.deepEqual(records.get('/i1.png'), { truncated: undefined, bytes: 2048 });
  } finally {
    await site.close();
  }
});
