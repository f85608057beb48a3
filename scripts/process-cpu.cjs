// Preloaded into every Node process of a test run by `scripts/test.js --cpu-report` (NODE_OPTIONS=--require):
// at exit, appends one line to $UBICRAWL_CPU_REPORT with the process's CPU time (all its threads) and what it
// was, so that the suite's CPU can be split between test files and the agent processes they start.
// A process killed with SIGKILL runs no exit handler and is missing from the report.
'use strict';
const { isMainThread } = require('node:worker_threads');
const out = process.env.UBICRAWL_CPU_REPORT;
if (isMainThread && out) {
  const { appendFileSync } = require('node:fs');
  const started = Date.now();
  process.on('exit', () => {
    const u = process.cpuUsage();
    const line = { pid: process.pid, ppid: process.ppid, argv: process.argv.slice(1, 3).join(' '), cpuS: (u.user + u.system) / 1e6, wallS: (Date.now() - started) / 1000 };
    try { appendFileSync(out, `${JSON.stringify(line)}\n`); } catch { /* the report is best effort */ }
  });
}
