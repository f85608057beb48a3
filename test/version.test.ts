// One version: package.json's, read once by src/version.ts, is what the CLI,
// the API, the default User-Agent and the warcinfo record say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOFTWARE, VERSION } from '../src/version.js';
import { DEFAULT_ROBOTS_TOKEN, DEFAULT_USER_AGENT } from '../src/config.js';
import { productToken } from '../src/robots/parse.js';
import { buildProgram } from '../src/cli/main.js';

// Compiled to dist/test/: the package root is two folders up.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

test('VERSION is package.json\'s; the User-Agent and the warcinfo software carry it', () => {
  assert.equal(VERSION, pkg.version);
  assert.equal(SOFTWARE, `${pkg.name}/${pkg.version}`);
  assert.ok(DEFAULT_USER_AGENT.startsWith(`${SOFTWARE} `), DEFAULT_USER_AGENT);
  assert.equal(productToken(DEFAULT_USER_AGENT), DEFAULT_ROBOTS_TOKEN, 'robots.txt groups are matched on the User-Agent\'s first word');
  assert.equal(buildProgram().version(), VERSION);
});

test('no source file writes the version itself', () => {
  const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  const quoted = new RegExp(`['"\`/]${pkg.version.replace(/\./g, '\\.')}['"\`]`);
  const offenders = files(join(ROOT, 'src')).filter((f) => quoted.test(readFileSync(f, 'utf8'))).map((f) => f.slice(ROOT.length + 1));
  assert.deepEqual(offenders, []);
});
