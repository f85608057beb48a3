// ScopePolicy cost per extracted link: rewrite() + check() over a mix of
// ordinary, paginated, calendar, session-id and deep URLs on 1,000 hosts.
// Prints ns per URL (CPU time, median of 5 runs) and the verdict counts.
// Run: npx tsc -p . && node dist/bench/scope.js

import { ScopePolicy } from '../src/scope/traps.js';
import { prng } from './textgen.js';
import { median } from './measure.js';

const cpu = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

const r = prng(1);
const words = ['news', 'sport', 'article', 'the-best-way-to-cook-rice', 'about', 'contact', 'products', 'blue-widget', 'faq', 'team'];
const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)];
const urls: Array<[string, string]> = [];
for (let i = 0; i < 200000; i++) {
  const host = `host${Math.floor(r() * 1000)}.example`;
  const k = r();
  let u: string;
  if (k < 0.5) u = `https://${host}/${pick(words)}/${pick(words)}-${Math.floor(r() * 100000)}`;
  else if (k < 0.65) u = `https://${host}/list?page=${Math.floor(r() * 5000)}&sort=date`;
  else if (k < 0.75) u = `https://${host}/cal/${2000 + Math.floor(r() * 120)}/${1 + Math.floor(r() * 12)}/${1 + Math.floor(r() * 28)}`;
  else if (k < 0.8) u = `https://${host}/shop;jsessionid=${Math.floor(r() * 1e12).toString(16)}?item=${Math.floor(r() * 1000)}`;
  else if (k < 0.85) u = `https://${host}/a/b/a/b/a/b/${i}`;
  else if (k < 0.9) u = `https://${host}/img/${Math.floor(r() * 2 ** 32).toString(16)}${Math.floor(r() * 2 ** 32).toString(16)}.png`;
  else u = `https://${host}/${pick(words)}?utm=x&ref=${pick(words)}&q=${pick(words)}`;
  urls.push([u, host]);
}

const runs: number[] = [];
let p = new ScopePolicy();
for (let run = 0; run < 5; run++) {
  p = new ScopePolicy();
  const t0 = cpu();
  for (const [u, h] of urls) p.check(p.rewrite(u), h);
  runs.push(((cpu() - t0) * 1e6) / urls.length);
}
console.log(`ScopePolicy rewrite()+check(): ${median(runs).toFixed(0)} ns/URL (median of 5 runs, ${urls.length.toLocaleString('en')} URLs, node ${process.version})`);
console.log(`accepted ${p.accepted}, session ids stripped ${p.sessionIdsStripped}, turned away:`, p.counts());
