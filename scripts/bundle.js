// Bundles the compiled CLI (dist/src) into dist/bundle/ for bin/ubicrawl.js (run after tsc, by `npm run build`).
// Why: `ubicrawl join` loads about 720 ES modules (libp2p and its dependencies are most of them); Node resolves,
// reads and links each one, which took 0.8–1 s of a start that must reach its first request within 0.5 s.
// One file loads in a fraction of that (docs/performance.md "Start-up"). The library (dist/src) stays unbundled.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = `${root}dist/src`;
const out = `${root}dist/bundle`;

// Kept outside the bundle: classic-level loads a native addon from its own folder; playwright-core is large
// and loaded only when rendering is on (src/render/browser.ts imports it lazily).
const external = ['classic-level', 'playwright-core'];

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  logLevel: 'warning',
  legalComments: 'none',
  // CommonJS dependencies inside an ES module bundle still call require() for Node built-ins.
  banner: { js: "import { createRequire as __ubicrawlRequire } from 'node:module'; const require = __ubicrawlRequire(import.meta.url);" },
};

rmSync(out, { recursive: true, force: true });
await build({
  ...common,
  // One build: the CLI and the two workers. With splitting, what a command imports lazily (the crawl, WARC tools,
  // the graph export) lands in its own chunk that is parsed only when that command runs; all files share one
  // folder, so the workers' file URLs (new URL('./worker.js', import.meta.url)) resolve from any chunk, and
  // version.ts's '../../package.json' still reaches the package root (dist/bundle is as deep as dist/src).
  entryPoints: { ubicrawl: `${src}/cli/entry.js`, worker: `${src}/warc/worker.js`, 'fingerprint-worker': `${src}/dedup/fingerprint-worker.js` },
  outdir: out,
  splitting: true,
  chunkNames: 'chunk-[hash]',
});
