// Benchmark of the HTML extraction stage (src/parse/html.ts).
//   npx tsc -p . && node dist/bench/parse.js [--pages N] [--size BYTES] [--links N]
// Prints CPU µs per page and MB/s, median of 5 runs, for links only and links + visible text,
// on a realistic page (head with meta/link/script/style, paragraphs, inline markup, entities).
import { extractPage } from '../src/parse/html.js';
import { median } from './measure.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? Number(process.argv[i + 1]) : def;
}

const WORDS = ('the crawler fetches pages from many hosts and keeps politeness per host while extracting links ' +
  'from every document it stores in warc files for later analysis by researchers').split(' ');

/** A deterministic page of about `size` bytes with `links` links spread through the body. */
export function makePage(size: number, links: number, seed = 1): string {
  let x = seed;
  const rnd = (n: number): number => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x % n;
  };
  let s = '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    '<title>Synthetic page &mdash; host 17, page 42</title>\n' +
    '<meta name="description" content="A page of the synthetic web used for benchmarks">\n' +
    '<link rel="stylesheet" href="/static/site.css?v=3">\n<link rel="icon" href="/favicon.ico">\n' +
    '<link rel="canonical" href="https://host17.example/page/42">\n' +
    '<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag("js",new Date());</script>\n' +
    '<style>body{font-family:system-ui,sans-serif;margin:0 auto;max-width:60em}.nav a{color:#333;text-decoration:none}</style>\n' +
    '</head>\n<body class="page">\n<header class="site-header"><nav class="nav">\n';
  let made = 0;
  const linkEvery = Math.max(1, Math.floor((size - 1500) / Math.max(1, links)));
  let nextLink = s.length;
  while (s.length < size - 120) {
    if (made < links && s.length >= nextLink) {
      const host = rnd(4) === 0 ? `https://host${rnd(200)}.example` : '';
      s += `<a href="${host}/section/${rnd(50)}/page-${rnd(1000)}.html" class="link item" title="Link number ${made}">Link text ${made}</a>\n`;
      made++;
      nextLink += linkEvery;
      continue;
    }
    s += '<div class="block"><p class="para">';
    for (let k = 0; k < 30; k++) s += WORDS[rnd(WORDS.length)] + (k % 9 === 8 ? ', ' : ' ');
    s += '<span class="em">inline &amp; emphasised</span> <b>bold</b>.</p></div>\n';
  }
  while (made < links) s += `<a href="/tail/${made++}">tail</a>\n`;
  s += '<footer><p>&copy; 2024 Synthetic Web</p></footer>\n</body>\n</html>\n';
  return s;
}


function run(label: string, bodies: Uint8Array[], wantText: boolean, pages: number): void {
  const opts = { url: 'https://host17.example/page/42', contentType: 'text/html; charset=utf-8', robotsToken: 'ubicrawl', wantText };
  let sink = 0;
  for (let i = 0; i < 2000; i++) sink += extractPage(bodies[i % bodies.length], opts).links.length; // warm-up (JIT)
  const per: number[] = [];
  let bytes = 0;
  for (const b of bodies) bytes += b.length;
  const avgBytes = bytes / bodies.length;
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < pages; i++) sink += extractPage(bodies[i % bodies.length], opts).links.length;
    const c = process.cpuUsage(c0);
    per.push((c.user + c.system) / pages);
  }
  const us = median(per);
  const mbs = avgBytes / us; // bytes per µs = MB/s
  console.log(`${label.padEnd(22)} ${us.toFixed(1).padStart(7)} µs/page CPU  ${mbs.toFixed(1).padStart(6)} MB/s  (runs: ${per.map((p) => p.toFixed(1)).join(', ')}; ${sink > 0 ? 'ok' : '-'})`);
}

function main(): void {
const size = arg('size', 15_000);
const links = arg('links', 20);
const pages = arg('pages', 20_000);
const enc = new TextEncoder();
const bodies = Array.from({ length: 16 }, (_, i) => enc.encode(makePage(size, links, i + 1)));
const check = extractPage(bodies[0], { url: 'https://host17.example/page/42', contentType: 'text/html', robotsToken: 'ubicrawl' });
console.log(`page ≈ ${bodies[0].length} bytes, ${links} links in markup (${check.links.length} distinct extracted), ${pages} pages per run, median of 5 runs`);
run('links', bodies, false, pages);
run('links + text', bodies, true, pages);
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/').split('/').pop() ?? '')) main();
