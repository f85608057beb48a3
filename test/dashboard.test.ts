// The dashboard in a real browser (docs/operations.md "Dashboard"): Debian's headless
// chromium driven by playwright-core loads `GET /`, sees the mesh members and a
// throughput figure that changes, and finds a URL and a host through the search box.
// The page must also run under its own Content-Security-Policy without a single
// console error (a wrong CSP hash would block the script and show up here).
// Skips, saying why, only when /usr/bin/chromium is absent.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { startApiServer, type ApiServer } from '../src/api/server.js';
import { MemoryBackend, FETCHED_URL, WARC_FILE, SELF } from './api-fixture.js';
import { tempDir } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (Debian: apt-get install -y chromium); dashboard browser test skipped`;
if (skip) console.log(`# SKIP: ${skip}`);

const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  // Belt and braces: no host name resolves, so nothing but the loopback API can be reached.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

async function launch(userDataDir: string): Promise<BrowserContext> {
  const { chromium } = await import('playwright-core');
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 60_000, viewport: { width: 1280, height: 900 },
  });
}

/** Collects what would tell a person the page is broken. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return problems;
}

describe('dashboard in headless chromium', () => {
  let backend: MemoryBackend;
  let server: ApiServer;
  let ctx: BrowserContext;
  // A fresh profile, removed only once chromium has exited (it writes until then).
  let userDataDir: string | undefined;
  before(async () => {
    if (skip) return;
    userDataDir = mkdtempSync(join(tmpdir(), 'ubicrawl-chromium-'));
    backend = new MemoryBackend();
    backend.startTicking(100, 3);
    server = await startApiServer({ listen: '127.0.0.1:0', backend });
    ctx = await launch(userDataDir);
  });
  after(async () => {
    await ctx?.close();
    backend?.stopTicking();
    await server?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });

  test('the page shows the members and a throughput figure that changes', { skip }, async () => {
    const page = await ctx.newPage();
    const problems = watch(page);
    await page.goto(server.url);
    assert.equal(await page.title(), 'ubicrawl agent');
    const rows = page.locator('#members tbody tr');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#members tbody tr').length === 3, undefined, { timeout: 10_000 });
    assert.match(await rows.nth(0).innerText(), /\(this agent\)/);
    assert.equal(await rows.nth(0).locator('td').first().getAttribute('title'), SELF);
    assert.match(await page.locator('#mesh-summary').innerText(), /3 members/);
    assert.match(await rows.nth(1).innerText(), /33\.0%/);
    // Throughput: the fetched count and the chart both move as the backend crawls.
    const fetched1 = await page.locator('#stat-fetched').innerText();
    const path1 = await page.locator('#chart path.line').getAttribute('d');
    assert.ok(path1 && path1.startsWith('M'), 'the chart has a line');
    await page.waitForFunction((before) => (globalThis as any).document.getElementById('stat-fetched').textContent !== before, fetched1, { timeout: 10_000 });
    await page.waitForFunction((before) => (globalThis as any).document.querySelector('#chart path.line')?.getAttribute('d') !== before, path1, { timeout: 10_000 });
    assert.match(await page.locator('#stat-rate').innerText(), /^\d+(\.\d)?$/);
    assert.match(String(await page.locator('#chart').getAttribute('aria-label')), /^Pages per second over the last 5 minutes: now [\d.]+, peak [\d.]+\.$/);
    assert.match(await page.locator('#hosts tbody').innerText(), /www\.example\.com/);
    assert.match(await page.locator('#errors tbody').innerText(), /ENOTFOUND nowhere\.invalid/);
    // The render tier's figures (docs/render.md "Operations").
    assert.equal(await page.locator('#render').isVisible(), true);
    assert.equal(await page.locator('#render-queue').innerText(), '17');
    assert.equal(await page.locator('#render-failed').innerText(), '3 / 1 / 2');
    assert.equal(await page.locator('#render-time').innerText(), '1.45 s');
    assert.match(await page.locator('#render-memory').innerText(), /300(\.0)? MiB/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('the search box finds a URL (owner, WARC file, offset) and a host', { skip }, async () => {
    const page = await ctx.newPage();
    const problems = watch(page);
    await page.goto(server.url);
    await page.getByLabel('URL or host name').fill(FETCHED_URL);
    await page.getByRole('button', { name: 'Inspect' }).click();
    const result = page.locator('#inspect-result');
    await result.locator('dl.kv').getByText(WARC_FILE, { exact: false }).waitFor({ timeout: 10_000 });
    const text = await result.innerText();
    assert.match(text, /@ 12345 \(6789 bytes\)/);
    assert.match(text, /this agent/);
    assert.match(text, /HTTP 200/);
    // Enter submits too; a bare host name asks /hosts.
    await page.getByLabel('URL or host name').fill('WWW.EXAMPLE.COM');
    await page.getByLabel('URL or host name').press('Enter');
    await result.locator('dl.kv').getByText('parsed (HTTP 200)', { exact: false }).waitFor({ timeout: 10_000 });
    // An unknown host shows the API's message instead of a result.
    await page.getByLabel('URL or host name').fill('unknown.example.net');
    await page.getByLabel('URL or host name').press('Enter');
    await result.locator('.error').getByText('nothing is known about host unknown.example.net').waitFor({ timeout: 10_000 });
    // Crawled strings are text, never markup.
    backend.hosts.set('evil.example', { ...backend.hosts.get('www.example.com')!, host: 'evil.example', lastFetches: [{ url: 'http://evil.example/<img src=x onerror=alert(1)>', status: 200, at: Date.now(), durationMs: 1, error: null }] });
    await page.getByLabel('URL or host name').fill('evil.example');
    await page.getByLabel('URL or host name').press('Enter');
    await result.locator('table').getByText('<img src=x onerror=alert(1)>', { exact: false }).waitFor({ timeout: 10_000 });
    assert.equal(await result.locator('img').count(), 0);
    if (process.env.UBICRAWL_SCREENSHOT_DIR) await page.screenshot({ path: join(process.env.UBICRAWL_SCREENSHOT_DIR, 'dashboard.png'), fullPage: true });
    // The browser logs the unknown host's 404 response; nothing else may show up.
    assert.deepEqual(problems, ['console error: Failed to load resource: the server responded with a status of 404 (Not Found)']);
    await page.close();
  });

  test('behind a bearer token the page asks for it, then works', { skip }, async () => {
    const file = join(tempDir(), 'token');
    const token = 'f00d'.repeat(10);
    writeFileSync(file, token);
    const b = new MemoryBackend();
    const s = await startApiServer({ listen: '127.0.0.1:0', tokenFile: file, backend: b });
    try {
      const page = await ctx.newPage();
      await page.goto(s.url);
      const auth = page.locator('#auth');
      await auth.waitFor({ state: 'visible', timeout: 10_000 });
      assert.match(await page.locator('#conn').innerText(), /bearer token/);
      await page.getByLabel(/API token/).fill(token);
      await page.getByRole('button', { name: 'Use token' }).click();
      await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#members tbody tr').length === 3, undefined, { timeout: 10_000 });
      assert.equal(await auth.isVisible(), false);
      await page.close();
    } finally {
      await s.close();
    }
  });
});
