#!/usr/bin/env node
// Entry point: the bundled CLI (scripts/bundle.js; it runs src/polyfill.ts before anything else).
import { main } from '../dist/bundle/ubicrawl.js';

main(process.argv).then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`ubicrawl: ${err?.message ?? err}\n`);
  process.exitCode = 1;
});
