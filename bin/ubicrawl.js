#!/usr/bin/env node
// Entry point. The polyfill must be the very first import (see src/polyfill.ts).
import '../dist/src/polyfill.js';
import { main } from '../dist/src/cli/main.js';

main(process.argv).then((code) => { process.exitCode = code; }, (err) => {
  process.stderr.write(`ubicrawl: ${err?.message ?? err}\n`);
  process.exitCode = 1;
});
