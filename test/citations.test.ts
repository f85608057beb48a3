// Comments and docs cite what a reader of this repository can open: a file of
// it (docs/…, src/…) or an RFC, spec or paper — not a design document or an
// issue tracker that is not in it. And a cited docs/ page (and the section
// quoted after it) exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Compiled to dist/test/: the repository root is two folders up.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SELF = 'citations.test.ts';

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = join(dir, e.name);
    if (e.isDirectory()) return files(rel);
    return /\.(ts|js|md)$/.test(e.name) && basename(rel) !== SELF ? [rel] : [];
  });
}

const sources = (): string[] => ['src', 'test', 'bench', 'docs', 'scripts'].flatMap(files);

/** Lines of `rel` matching `re`, as `path:line: text`. */
function grep(rel: string, re: RegExp): string[] {
  return readFileSync(join(ROOT, rel), 'utf8').split('\n').flatMap((l, i) => (re.test(l) ? [`${rel}:${i + 1}: ${l.trim()}`] : []));
}

test('no comment, test name or doc cites the design document or an issue number of this project', () => {
  // An upstream project's issue is written with its number sign ("warcio issue #75") and stays.
  const design = /DESIGN\.md|DESIGN "/;
  const issue = /\bissues? \d|\bissue \d+'s\b/i;
  const found = sources().flatMap((f) => [...grep(f, design), ...grep(f, issue)]);
  assert.deepEqual(found, []);
});

test('every cited docs/ page exists, and so does the section quoted after it', () => {
  const missing: string[] = [];
  for (const f of sources()) {
    readFileSync(join(ROOT, f), 'utf8').split('\n').forEach((line, i) => {
      for (const m of line.matchAll(/\b(docs\/[a-z0-9-]+\.md)(?:,? "([^"]+)")?/g)) {
        const doc = join(ROOT, m[1]!);
        if (!existsSync(doc)) { missing.push(`${f}:${i + 1}: ${m[1]}`); continue; }
        const section = m[2]?.replace(/…$/, '');
        if (section && !readFileSync(doc, 'utf8').toLowerCase().includes(section.toLowerCase())) {
          missing.push(`${f}:${i + 1}: ${m[1]} "${m[2]}"`);
        }
      }
    });
  }
  assert.deepEqual(missing, []);
});
