#!/usr/bin/env node
// Entry point: the bundled CLI (scripts/bundle.js; it runs src/polyfill.ts before anything else).
import module from 'node:module';
import v8 from 'node:v8';

// V8 optimises a function with TurboFan once it has run "enough" (its interrupt budget): at the default, a crawl
// of a few thousand pages spends a fifth of its CPU compiling code that is warm for a moment only (TurboFan's
// threads, docs/performance.md "Start-up"). Four times the budget: only code that stays hot is optimised, and it
// still is, a little later. Set before the bundle is loaded (flags read when functions first run; the worker
// threads share them). An --interrupt-budget of the user's own (node's options or NODE_OPTIONS) is left alone.
// Only V8 11 (Node 20) has the flag: later ones tier up by invocation counts (Maglev, then TurboFan), and print
// "unrecognized flag" to stderr for it; their tiering is left at its defaults (not measured here).
const v8Major = Number(process.versions.v8.split('.')[0]);
if (v8Major <= 11 && ![...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('interrupt-budget'))) v8.setFlagsFromString('--interrupt-budget=270336');
// V8's code cache on disk (Node ≥ 22.1; absent on Node 20, where this does nothing): a later start reads the
// compiled bundle instead of compiling it again. NODE_DISABLE_COMPILE_CACHE=1 turns it off, NODE_COMPILE_CACHE=dir
// moves it. Before the bundle is imported, so that it is cached too.
module.enableCompileCache?.();
const { main } = await import('../dist/bundle/ubicrawl.js');

main(process.argv).then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`ubicrawl: ${err?.message ?? err}\n`);
  process.exitCode = 1;
});
