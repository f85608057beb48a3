// docs/cli.md must describe every command and option the program has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../src/cli/main.js';
import { renderCliDoc } from '../src/cli/doc.js';

test('docs/cli.md is generated from the program and up to date (run `npm run docs:cli`)', () => {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'cli.md');
  const doc = readFileSync(file, 'utf8');
  assert.equal(doc, renderCliDoc(buildProgram()) + '\n');
  for (const o of ['--seed', '--swarm-key', '--api-token-file', '--resolve']) assert.ok(doc.includes(o));
});
