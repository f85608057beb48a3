#!/usr/bin/env node
// Entry point: the bundled CLI (scripts/bundle.js; it runs src/polyfill.ts before anything else).
import module from 'node:module';

// V8's code cache on disk (Node ≥ 22.1; absent on Node 20, where this does nothing): a later start reads the
// compiled bundle instead of compiling it again (docs/performance.md "Start-up"). NODE_DISABLE_COMPILE_CACHE=1
// turns it off, NODE_COMPILE_CACHE=dir moves it. Before the bundle is imported, so that it is cached too.
module.enableCompileCache?.();
const { main } = await import('../dist/bundle/ubicrawl.js');

main(process.argv).then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`ubicrawl: ${err?.message ?? err}\n`);
  process.exitCode = 1;
});
