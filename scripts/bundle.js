// Bundles the compiled CLI (dist/src) into dist/bundle/ for bin/ubicrawl.js (run after tsc, by `npm run build`).
// Why: `ubicrawl join` loads about 720 ES modules (libp2p and its dependencies are most of them); Node resolves,
// reads and links each one, which took 0.8–1 s of a start that must reach its first request within 0.5 s.
// One file loads in a fraction of that (docs/performance.md "Start-up"). The library (dist/src) stays unbundled.
import { build } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  target: 'node20',
  external,
  logLevel: 'warning',
  legalComments: 'none',
};

rmSync(out, { recursive: true, force: true });

// The CLI: one CommonJS file. Node 20 keeps no compiled code for ES modules between runs (and compiling the
// bundle was ≈ 100 CPU-ms of every start); a script's code can be cached, and bin/ubicrawl.js keeps it on disk
// (V8's code cache, through vm.Script; Node ≥ 22.1 does the same itself for CommonJS). Every module is
// initialised where it is first required, so a command still evaluates only what it imports, as with the ES
// module chunks this replaced.
// - `import.meta.url` becomes the bundle's own file URL: the workers' files (new URL('./worker.js', …)) are
//   beside it, and version.ts's '../../package.json' still reaches the package root.
// - dynamic import() becomes require(): playwright-core, the one external loaded that way, is CommonJS.
// - src/hash/xxhash.ts waits for its WebAssembly at the top level, which a script cannot: here it takes the
//   instance bin/ubicrawl.js made before loading the bundle (the same functions of the same xxhash-wasm).
// - 'use strict': the ES modules in it were written for strict mode (CommonJS dependencies declare their own).
const xxhashFromEntry = {
  name: 'xxhash-from-entry',
  setup(b) {
    b.onLoad({ filter: /[\\/]dist[\\/]src[\\/]hash[\\/]xxhash\.js$/ }, () => ({
      loader: 'js',
      contents: `const api = globalThis[Symbol.for('ubicrawl.xxhash')];
if (!api) throw new Error('the CLI bundle needs the xxhash-wasm instance bin/ubicrawl.js makes');
export function xxh64(text, seed = 0n) { return api.h64(text, seed); }
export function xxh64Bytes(bytes, seed = 0n) { return api.h64Raw(bytes, seed); }
export function xxh64Hex(text, seed = 0n) { return api.h64ToString(text, seed); }
`,
    }));
  },
};
await build({
  ...common,
  format: 'cjs',
  entryPoints: { ubicrawl: `${src}/cli/entry.js` },
  outdir: out,
  outExtension: { '.js': '.cjs' },
  define: { 'import.meta.url': '__ubicrawlBundleUrl' },
  supported: { 'dynamic-import': false },
  banner: { js: "'use strict';\nconst __ubicrawlBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [xxhashFromEntry],
});
// ASCII throughout, so that bin/code-cache.js reads it without decoding UTF-8. esbuild escapes every non-ASCII
// character of code (its default charset), so what is left is in the comments it keeps: made '?' there.
const cli = `${out}/ubicrawl.cjs`;
const text = readFileSync(cli, 'utf8');
if (/[^\x00-\x7f]/.test(text)) writeFileSync(cli, text.replace(/[^\x00-\x7f]/g, '?'));

// The helper thread's entry and the two handler modules it loads by URL (src/util/helper-thread.ts): ES
// modules, as before (a Worker started from a file URL loads it as one; the package is "type": "module").
// They share chunks with each other only.
await build({
  ...common,
  format: 'esm',
  // CommonJS dependencies inside an ES module bundle still call require() for Node built-ins.
  banner: { js: "import { createRequire as __ubicrawlRequire } from 'node:module'; const require = __ubicrawlRequire(import.meta.url);" },
  entryPoints: { 'helper-worker': `${src}/util/helper-worker.js`, worker: `${src}/warc/worker.js`, 'fingerprint-worker': `${src}/dedup/fingerprint-worker.js` },
  outdir: out,
  splitting: true,
  chunkNames: 'chunk-[hash]',
});
