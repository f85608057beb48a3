// Micro-benchmark of normalizeUrl on a realistic link mix: run with
//   npx tsc -p . && node dist/bench/url.js [count]
// Prints CPU ns per URL (median of 5 runs) for normalizeUrl and, for scale, for
// `new URL(href, base).href` (WHATWG resolution alone, no RFC 3986 normal form).
import { normalizeUrl } from '../src/url/normalize.js';
import { median } from './measure.js';

const COUNT = Number(process.argv[2] ?? 200_000);
const PER_PAGE = 50; // links resolved against the same page URL in a row

// Deterministic xorshift32 so every run measures the same input.
let seed = 0x9e3779b9;
function rnd(n: number): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}
const words = ['news', 'sport', 'article', 'category', 'products', 'blog', 'about', 'contact', 'search', 'tag',
  'docs', 'api', 'v2', 'users', 'item', 'page', 'archive', '2024', '05', 'index.html', 'show.php', 'q'];
function word(): string { return words[rnd(words.length)]; }
function path(depth: number): string {
  let p = '';
  for (let i = 0; i < depth; i++) p += '/' + word() + (rnd(4) === 0 ? '-' + rnd(100000) : '');
  return p;
}

function makeHref(host: string): string {
  const k = rnd(100);
  if (k < 30) return `https://${host}${path(1 + rnd(4))}`;
  if (k < 55) return `${path(1 + rnd(3))}${rnd(3) === 0 ? `?id=${rnd(99999)}&p=${rnd(20)}` : ''}`;
  if (k < 65) return `../${word()}/${word()}.html`;
  if (k < 70) return `${word()}.html#section-${rnd(9)}`;
  if (k < 76) return `https://${host}${path(2)}?utm_source=newsletter&utm_medium=email&id=${rnd(1000)}`;
  if (k < 81) return `https://${host}/caf%c3%a9/%7euser/${word()}%20${word()}`;
  if (k < 85) return `HTTPS://${host.toUpperCase()}:443${path(2)}`;
  if (k < 88) return `https://${host}/wiki/Zürich_${rnd(50)}`;
  if (k < 90) return `//cdn.${host}/static/${rnd(1e6).toString(16)}.js`;
  if (k < 92) return rnd(2) === 0 ? 'mailto:someone@example.org' : 'javascript:void(0)';
  if (k < 94) return `https://${host}${path(3)}/./../${word()}`;
  return `https://other-${rnd(500)}.example.net${path(2)}/`;
}

const hrefs: string[] = new Array(COUNT);
const bases: string[] = new Array(COUNT);
for (let i = 0; i < COUNT; i += PER_PAGE) {
  const host = `www.site${rnd(2000)}.example.com`;
  const base = `https://${host}${path(2)}/page-${rnd(1000)}.html`;
  for (let j = i; j < Math.min(COUNT, i + PER_PAGE); j++) {
    hrefs[j] = makeHref(host);
    bases[j] = base;
  }
}

// The generator built the strings by concatenation (V8 cons-strings); a crawler
// gets flat slices of the page from its HTML parser. Re-split to match.
{
  const flatH = hrefs.join('\n').split('\n');
  const flatB = bases.join('\n').split('\n');
  for (let i = 0; i < COUNT; i++) { hrefs[i] = flatH[i]; bases[i] = flatB[i]; }
}


function measure(label: string, fn: (h: string, b: string) => unknown): number {
  let sink = 0;
  for (let i = 0; i < Math.min(COUNT, 20_000); i++) if (fn(hrefs[i], bases[i])) sink++; // warm-up
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    // CPU time (user + system) of this process rather than wall time: the
    // figure then holds on a shared machine where other work steals the cores.
    const t0 = process.cpuUsage();
    for (let i = 0; i < COUNT; i++) if (fn(hrefs[i], bases[i])) sink++;
    const d = process.cpuUsage(t0);
    runs.push(((d.user + d.system) * 1000) / COUNT);
  }
  const m = median(runs);
  console.log(`${label.padEnd(28)} ${m.toFixed(0).padStart(6)} ns/URL  (runs: ${runs.map((x) => x.toFixed(0)).join(', ')}; sink ${sink})`);
  return m;
}

console.log(`${COUNT} hrefs, ${PER_PAGE} per base URL`);
measure('normalizeUrl(href, base)', (h, b) => normalizeUrl(h, b));
if (process.env.BASELINE !== '0') measure('new URL(href, base).href', (h, b) => { try { return new URL(h, b).href; } catch { return null; } });
