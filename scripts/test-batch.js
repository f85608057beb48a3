#!/usr/bin/env node
// Runs several test files in this one Node process (scripts/test.js starts it for the SHARED files):
//   node --test-force-exit --test-reporter=spec scripts/test-batch.js a.test.js b.test.js …
// A process costs about half a CPU-second only to start Node, node:test and the files' imports
// (docs/performance.md "Test suite"); files that share it load node:test and the modules they have in common once.
//
// Each file's top-level tests join node:test's root, which runs them one at a time in the order they were
// created: file by file, as when each file runs alone. The first root test below waits until every file is
// imported, so that all of them are known before any runs: with --test-force-exit node:test ends the process
// once the tests it knows of have ended, and a file still importing (a top-level await) would lose its tests.
// A file that fails to import fails that first test, naming the file; the other files still run. node:test's
// failure summary names each failed test's file ("test at dist/test/x.test.js:12:1"), which scripts/test.js
// reads to name the failed files.
import { test } from 'node:test';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const files = process.argv.slice(2);
let imported;
const allImported = new Promise((res) => { imported = res; });
test(`import ${files.length} test files into one process`, async () => {
  const errors = await allImported;
  if (errors.length) throw new Error(`could not import:\n${errors.join('\n')}`);
});
const errors = [];
for (const file of files) {
  try {
    await import(pathToFileURL(resolve(file)).href);
  } catch (err) {
    errors.push(`${file}: ${err?.stack ?? err}`);
  }
}
imported(errors);
