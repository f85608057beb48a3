// `npm run demo`: a crawl of a local synthetic web, no internet needed.
// Starts the synthetic web on loopback, runs `ubicrawl join` against it with a
// live progress display, then shows where the WARC files are and what is in them.
import '../src/polyfill.js';
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname, resolve, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSyntheticWeb } from './web/index.js';
import { readWarc, verifyWarc } from '../src/warc/reader.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'ubicrawl.js');
const DATA = resolve(process.env.UBICRAWL_DEMO_DIR ?? join(ROOT, 'ubicrawl-demo'));

async function main(): Promise<void> {
  const web = await startSyntheticWeb({
    seed: 42, hosts: 24, pagesPerHost: 30, outLinks: 8, crossHostShare: 0.25, pageBytes: { min: 8000, max: 20000 },
    robots: 'mixed', variantShare: 0.1, errorMix: { notFound: 0.03, redirect: 0.04, serverError: 0.02 },
    latencyMs: 5,
  });
  const expected = web.reachable();
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const seeds = join(DATA, 'seeds.txt');
  writeFileSync(seeds, web.roots().join('\n') + '\n');
  const say = (s: string) => process.stdout.write(s + '\n');
  say(`ubicrawl demo: a synthetic web of ${web.hostCount} hosts on 127.0.0.1:${web.port}`);
  say(`  ${expected.reachableAllowed.size} pages reachable and allowed by robots.txt, ${expected.disallowed.size} disallowed`);
  say(`  crawling with a 200 ms per-host delay, data in ${relative(process.cwd(), DATA) || '.'}\n`);
  const args = ['join', '--seed', seeds, '--data-dir', DATA, '--until-idle', '--min-delay', '200', '--concurrency', '24',
    '--summary', join(DATA, 'summary.json'), ...web.resolveArgs.flatMap((r) => ['--resolve', r])];
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((r) => child.once('close', r));
  await web.close();
  if (code !== 0) { process.stderr.write(`demo: the crawl exited with code ${code}\n`); process.exit(1); }

  const summary = JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(join(DATA, 'summary.json'), 'utf8'))) as Record<string, unknown>;
  say(`\ncrawl finished: ${String(summary.pages)} pages in ${(Number(summary.durationMs) / 1000).toFixed(1)} s, ` +
    `${String(summary.robotsBlocked)} URLs blocked by robots.txt, status classes ${JSON.stringify(summary.pagesByStatusClass)}`);
  const warcDir = join(DATA, 'warc');
  const files = readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz')).sort();
  say(`\nWARC files (WARC/1.1, one gzip member per record) in ${relative(process.cwd(), warcDir)}:`);
  for (const f of files) {
    const v = await verifyWarc(join(warcDir, f));
    say(`  ${f}  ${(statSync(join(warcDir, f)).size / 1024).toFixed(0)} KiB  ${v.records} records, ${v.responses} responses, digests ${v.digestErrors.length === 0 ? 'verified' : 'FAILED'}`);
  }
  say('\nthe first records of the first file:');
  let shown = 0;
  for await (const rec of readWarc(join(warcDir, files[0]!))) {
    say(`  ${rec.type.padEnd(9)} ${rec.headers['WARC-Target-URI'] ?? ''}  @${rec.offset}+${rec.length}`);
    if (++shown >= 6) break;
  }
  say('\nto read them:');
  say(`  zcat ${relative(process.cwd(), join(warcDir, files[0]!))} | less            # plain text, record by record`);
  say('  any WARC tool (warcio, pywb, …) reads them too');
  say(`  summary: ${relative(process.cwd(), join(DATA, 'summary.json'))}`);
}

main().catch((err) => { process.stderr.write(`demo failed: ${(err as Error).stack}\n`); process.exit(1); });
