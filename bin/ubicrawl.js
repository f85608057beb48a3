#!/usr/bin/env node
// Entry point: the bundled CLI (scripts/bundle.js; it runs src/polyfill.ts before anything else).
import module, { createRequire } from 'node:module';
import v8 from 'node:v8';
import { fileURLToPath } from 'node:url';
import xxhash from 'xxhash-wasm';
import { loadCached } from './code-cache.js';

// V8 optimises a function with TurboFan once it has run "enough" (its interrupt budget): at the default, a crawl
// of a few thousand pages spends a fifth of its CPU compiling code that is warm for a moment only (TurboFan's
// threads, docs/performance.md "Start-up"). Four times the budget: only code that stays hot is optimised, and it
// still is, a little later. Set before the bundle is loaded (flags read when functions first run; the worker
// threads share them). An --interrupt-budget of the user's own (node's options or NODE_OPTIONS) is left alone.
// Only V8 11 (Node 20) has the flag: later ones tier up by invocation counts (Maglev, then TurboFan), and print
// "unrecognized flag" to stderr for it; their tiering is left at its defaults (not measured here).
const v8Major = Number(process.versions.v8.split('.')[0]);
if (v8Major <= 11 && ![...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('interrupt-budget'))) v8.setFlagsFromString('--interrupt-budget=270336');

// The bundle's 64-bit hash (src/hash/xxhash.ts) needs xxhash-wasm's instance, which is made asynchronously.
globalThis[Symbol.for('ubicrawl.xxhash')] = await xxhash();

// Compiled code kept between runs (V8's code cache): a later start reads the compiled bundle instead of compiling
// it again. Node ≥ 22.1 does it itself (module.enableCompileCache()); on Node 20 ./code-cache.js does. Both use
// NODE_COMPILE_CACHE (a directory) and NODE_DISABLE_COMPILE_CACHE=1 (off).
const bundle = fileURLToPath(new URL('../dist/bundle/ubicrawl.cjs', import.meta.url));
let cli;
if (typeof module.enableCompileCache === 'function') {
  module.enableCompileCache();
  cli = createRequire(import.meta.url)(bundle);
} else {
  cli = loadCached(bundle, (exports, make) => exports.withStartFlags(make));
}

cli.main(process.argv).then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`ubicrawl: ${err?.message ?? err}\n`);
  process.exitCode = 1;
});
