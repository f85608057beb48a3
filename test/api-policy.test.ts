// The crawl policy routes of the API (docs/operations.md "API reference"):
// GET /policy open for reads on loopback, POST /policy/block and /unblock
// behind the bearer token, their bodies checked before the backend sees them,
// and a backend without a policy answering 501.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApiServer } from '../src/api/server.js';
import type { PolicyReport } from '../src/api/backend.js';
import { activeBlocks, blockTargetOf, emptyPolicy, policySummary, withBlock, withoutBlock, type PolicyDocument } from '../src/policy/document.js';
import { MemoryBackend, SELF } from './api-fixture.js';
import { tempDir } from './helpers.js';

const TOKEN = 'beef'.repeat(10);
const tokenFile = join(tempDir(), 'token');
writeFileSync(tokenFile, TOKEN + '\n', { mode: 0o600 });

/** The fixture backend with a policy document held in memory. */
class PolicyBackend extends MemoryBackend {
  doc: PolicyDocument = emptyPolicy({ mode: 'seeds', allowHosts: [], include: [], exclude: [], maxDepth: 0, maxPagesPerHost: 0, acceptTypes: [] });
  policy(): PolicyReport {
    const d = this.doc;
    return {
      summary: policySummary(d), version: d.version, updatedAt: d.updatedAt, scope: d.scope, scopeOrigin: d.scopeOrigin, seedUnits: d.seedUnits,
      blocks: activeBlocks(d).map((b) => ({ kind: b.kind, value: b.value, rev: b.rev, changedAt: b.changedAt, reason: b.reason })),
      members: [{ id: SELF, self: true, summary: policySummary(d), version: d.version, same: true }],
    };
  }
  async block(targets: string[], reason: string): Promise<PolicyReport> {
    this.doc = targets.reduce((d, t) => withBlock(d, blockTargetOf(t), 1, reason), this.doc);
    return this.policy();
  }
  async unblock(targets: string[]): Promise<PolicyReport> {
    this.doc = targets.reduce((d, t) => withoutBlock(d, blockTargetOf(t), 2), this.doc);
    return this.policy();
  }
}

async function call(base: string, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: await res.json() as Record<string, unknown> };
}

test('policy routes: reads open, changes take the token, bodies checked, a backend without a policy answers 501', async (t) => {
  const server = await startApiServer({ listen: '127.0.0.1:0', tokenFile, openReads: true, backend: new PolicyBackend() });
  t.after(() => server.close());
  const base = server.url;
  assert.equal((await call(base, 'GET', '/policy')).status, 200);
  assert.equal((await call(base, 'POST', '/policy/block', { targets: ['a.test'] })).status, 401, 'no token');
  for (const [body, pattern] of [
    [{}, /targets/], [{ targets: [] }, /targets/], [{ targets: [7] }, /targets\[0\]/], [{ targets: ['a.test'], reason: 7 }, /reason/],
    [{ targets: ['a.test'], extra: 1 }, /extra/], [{ targets: Array(1001).fill('a.test') }, /at most 1000/],
  ] as const) {
    const r = await call(base, 'POST', '/policy/block', body, TOKEN);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(String(r.json.error), pattern);
  }
  assert.equal((await call(base, 'POST', '/policy/unblock', { targets: ['a.test'], reason: 'x' }, TOKEN)).status, 400, 'unblock takes no reason');
  const blocked = await call(base, 'POST', '/policy/block', { targets: ['a.test', '=www.b.test'], reason: 'ticket 9' }, TOKEN);
  assert.equal(blocked.status, 200);
  assert.deepEqual((blocked.json as unknown as PolicyReport).blocks.map((b) => [b.kind, b.value, b.reason]), [['domain', 'a.test', 'ticket 9'], ['host', 'www.b.test', 'ticket 9']]);
  const lifted = await call(base, 'POST', '/policy/unblock', { targets: ['a.test'] }, TOKEN);
  assert.deepEqual((lifted.json as unknown as PolicyReport).blocks.map((b) => b.value), ['www.b.test']);
  assert.equal((await call(base, 'GET', '/policy/block')).status, 405);

  const plain = await startApiServer({ listen: '127.0.0.1:0', tokenFile, openReads: true, backend: new MemoryBackend() });
  t.after(() => plain.close());
  assert.equal((await call(plain.url, 'GET', '/policy')).status, 501);
});
