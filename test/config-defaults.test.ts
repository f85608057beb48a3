// One source of defaults: every default is written once, in src/config.ts. The
// CLI's options come from the tables of src/cli/options.ts, whose defaults are
// read from the config; docs/cli.md shows the same; the modules' own default
// objects are the config's; the API reports the configured capacity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command, Option } from 'commander';
import * as config from '../src/config.js';
import {
  configValue, defaultConfig, effectiveDefaults, resolveConfig, DEFAULT_API_LISTEN, DEFAULT_DATA_DIR, DEFAULT_MESH, DEFAULT_ROBOTS,
  type AgentConfig,
} from '../src/config.js';
import { buildProgram } from '../src/cli/main.js';
import { renderCliDoc } from '../src/cli/doc.js';
import { cliOptionOf, defaultOf, toAgentOptions, JOIN_OPTIONS, formatDuration, type CliOption } from '../src/cli/options.js';
import { DEFAULT_POLITENESS, politenessConfig } from '../src/politeness/host.js';
import { DEFAULT_DNS_CONFIG } from '../src/fetch/dns.js';
import { DEFAULT_DEDUP_CONFIG } from '../src/dedup/content.js';
import { DEFAULT_RECRAWL } from '../src/recrawl/schedule.js';
import { defaultRecrawlSettings } from '../src/recrawl/settings.js';
import { DEFAULT_SITEMAP_LIMITS } from '../src/sitemap/limits.js';
import { DEFAULT_SCOPE_OPTIONS } from '../src/scope/traps.js';
import { DEFAULT_COOKIE_LIMITS } from '../src/fetch/cookies.js';
import { DEFAULT_MAX_BYTES } from '../src/robots/index.js';
import { DEFAULT_API_LISTEN as API_MODULE_LISTEN } from '../src/api/backend.js';
import { startAgent } from '../src/crawl/agent.js';
import { tempDir } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Every command with its options, by full name ('join', 'robots check', …). */
function commands(program: Command): Array<{ name: string; cmd: Command }> {
  const out: Array<{ name: string; cmd: Command }> = [];
  const walk = (c: Command, prefix: string) => {
    for (const sub of c.commands) {
      const name = `${prefix} ${sub.name()}`.trim();
      out.push({ name, cmd: sub });
      walk(sub, name);
    }
  };
  walk(program, '');
  return out;
}

const optionsOf = (cmd: Command): Option[] => cmd.options.filter((o) => o.long !== '--help');
const joinCommand = (program: Command): Command => program.commands.find((c) => c.name() === 'join')!;

/** Parses a `join` command line without starting an agent. */
function parseJoin(args: string[]): Record<string, unknown> {
  const program = buildProgram();
  const join = joinCommand(program);
  join.action(() => {});
  program.exitOverride();
  join.exitOverride();
  program.parse(['join', ...args], { from: 'user' });
  return join.opts();
}

test('every option of every command comes from an options table, and no row carries a default of its own', () => {
  const allowed = new Set<keyof CliOption>(['flags', 'help', 'config', 'fallback', 'parse', 'choices', 'repeatable', 'noDefault', 'show', 'apply']);
  for (const { name, cmd } of commands(buildProgram())) {
    for (const o of optionsOf(cmd)) {
      const row = cliOptionOf(o);
      assert.ok(row, `${name} ${o.flags}: not from src/cli/options.ts`);
      for (const k of Object.keys(row)) assert.ok(allowed.has(k as keyof CliOption), `${name} ${o.flags}: unexpected field ${k}`);
      if (name === 'join') assert.ok(row.config, `join ${o.flags}: names no setting`);
      assert.ok(!(row.config && row.fallback), `${name} ${o.flags}: a setting and a fallback`);
    }
  }
});

test('every option shows its setting\'s default from src/config.ts', () => {
  const defaults = effectiveDefaults();
  let checked = 0;
  for (const { name, cmd } of commands(buildProgram())) {
    for (const o of optionsOf(cmd)) {
      const row = cliOptionOf(o)!;
      const expected = row.config ? configValue(defaults, row.config) : row.fallback?.();
      if (o.negate) {
        assert.equal(expected, true, `${name} ${o.flags} turns off a setting that is on by default`);
        assert.equal(o.defaultValue, undefined);
      } else if (row.repeatable) {
        assert.deepEqual(o.defaultValue, [], `${name} ${o.flags}: values are collected into a new list`);
        if (row.config) assert.ok(Array.isArray(expected), `${name} ${o.flags}: a list setting`);
      } else if (row.noDefault) {
        assert.equal(o.defaultValue, undefined, `${name} ${o.flags}: unset unless given`);
      } else if (!/[<[]/.test(o.flags) && !row.config) {
        assert.equal(o.defaultValue, false, `${name} ${o.flags}: a flag is off unless given`);
      } else {
        assert.deepEqual(o.defaultValue, expected, `${name} ${o.flags}: default is the config's`);
        if (row.show && expected !== undefined) assert.equal(o.defaultValueDescription, row.show(expected));
      }
      checked++;
    }
  }
  assert.ok(checked >= JOIN_OPTIONS.length + 10);
  // The defaults the API clients and tools fall back on are named constants of src/config.ts.
  const constants = new Set<unknown>(Object.values(config));
  for (const { name, cmd } of commands(buildProgram())) {
    for (const o of optionsOf(cmd)) {
      const row = cliOptionOf(o)!;
      if (!row.fallback) continue;
      const v = row.fallback();
      assert.ok(constants.has(v) || (typeof v === 'string' && v.startsWith(DEFAULT_DATA_DIR + '/')), `${name} ${o.flags}: fallback ${String(v)} is a config constant`);
    }
  }
});

test('join without options configures the agent exactly as the config defaults do', () => {
  const options = toAgentOptions(parseJoin([]));
  const fromCli = resolveConfig({ ...options, mesh: { ...options.mesh, enabled: true } });
  const fromDefaults = resolveConfig({ mesh: { enabled: true } });
  // The politeness section is completed by the module: compare what it makes of both.
  assert.deepEqual(politenessConfig(fromCli), politenessConfig(fromDefaults));
  const rest = (c: AgentConfig) => ({ ...c, politeness: undefined });
  assert.deepEqual(rest(fromCli), rest(fromDefaults));
});

test('join options set their settings (and the few that set more say so)', () => {
  const options = toAgentOptions(parseJoin([
    '--seed', 'http://a.test/', '--seed', '127.0.0.1:4001', '--concurrency', '4', '--retries', '1', '--per-ip-delay', '250',
    '--recrawl-min', '2h', '--recrawl-max', '1h', '--peer-rate', '100', '--capacity', '3', '--swarm-key', 'k', '--no-warc',
    '--dns-server', '127.0.0.1:53', '--max-body', '4096', '--heartbeat', '200',
  ]));
  const c = resolveConfig({ ...options, mesh: { ...options.mesh, enabled: true } });
  assert.deepEqual(c.seeds, ['http://a.test/']);
  assert.deepEqual(c.mesh.peers, ['127.0.0.1:4001']);
  assert.equal(c.concurrency, 4);
  assert.deepEqual(c.politeness, { maxRetries: 1, retryBaseMs: DEFAULT_POLITENESS.retryBaseMs, perIp: true, ipMinDelayMs: 250 });
  assert.equal(c.recrawl.minIntervalMs, 2 * 3_600_000);
  assert.equal(c.recrawl.maxIntervalMs, 2 * 3_600_000, 'never below the shortest');
  assert.deepEqual(c.mesh.receiveLimits, { ...DEFAULT_MESH.receiveLimits, itemsPerSec: 100, itemsBurst: config.RECEIVE_BURST_SECONDS * 100 });
  assert.equal(c.mesh.capacity, 3);
  assert.deepEqual(c.mesh.listen, [config.DEFAULT_MESH_LISTEN_WITH_KEY], 'with a swarm key, all interfaces');
  assert.equal(c.warc.enabled, false);
  assert.equal(c.warc.maxFileBytes, config.DEFAULT_WARC.maxFileBytes);
  assert.deepEqual(c.dns, { servers: ['127.0.0.1:53'] });
  assert.equal(c.fetch.maxBodyBytes, 4096);
  assert.equal(c.fetch.totalTimeoutMs, defaultConfig().fetch.totalTimeoutMs);
  assert.equal(c.mesh.heartbeatMs, 200);
  assert.equal(c.mesh.deadAfterMs, DEFAULT_MESH.deadAfterMs, 'the CLI sets dead-after on its own');
});

test('the modules\' default objects are the config\'s (one object, not a copy)', () => {
  assert.equal(DEFAULT_POLITENESS, config.DEFAULT_POLITENESS);
  assert.equal(DEFAULT_DNS_CONFIG, config.DEFAULT_DNS_CONFIG);
  assert.equal(DEFAULT_DEDUP_CONFIG, config.DEFAULT_DEDUP_CONFIG);
  assert.equal(DEFAULT_RECRAWL, config.DEFAULT_RECRAWL);
  assert.equal(DEFAULT_SITEMAP_LIMITS, config.DEFAULT_SITEMAP_LIMITS);
  assert.equal(API_MODULE_LISTEN, DEFAULT_API_LISTEN);
  assert.equal(DEFAULT_MAX_BYTES, DEFAULT_ROBOTS.maxBytes);
  assert.equal(DEFAULT_COOKIE_LIMITS, config.DEFAULT_COOKIE_LIMITS);
  assert.deepEqual(defaultRecrawlSettings(), { ...config.DEFAULT_RECRAWL_SETTINGS });
  for (const [k, v] of Object.entries(config.DEFAULT_SCOPE_LIMITS)) assert.equal((DEFAULT_SCOPE_OPTIONS as unknown as Record<string, unknown>)[k], v, `scope ${k}`);
  // The agent's config and the modules agree: the politeness module completes an empty section to its defaults.
  const d = defaultConfig();
  assert.deepEqual(politenessConfig(d), { ...DEFAULT_POLITENESS });
  assert.deepEqual(d.dedup, { ...DEFAULT_DEDUP_CONFIG });
  assert.equal(d.sitemaps.maxIndexDepth, DEFAULT_SITEMAP_LIMITS.maxIndexDepth);
  assert.equal(d.mesh.receiveLimits.itemsBurst, config.RECEIVE_BURST_SECONDS * d.mesh.receiveLimits.itemsPerSec);
  assert.equal(d.mesh.deadAfterMs, config.DEAD_AFTER_HEARTBEATS * d.mesh.heartbeatMs);
  // defaultConfig() hands out fresh objects: changing one changes no default.
  d.mesh.listen.push('x'); d.mesh.admission.maxMembers = 1; d.recrawl.enabled = true;
  assert.deepEqual(defaultConfig().mesh.listen, [config.DEFAULT_MESH_LISTEN]);
  assert.equal(defaultConfig().mesh.admission.maxMembers, config.DEFAULT_MESH_ADMISSION.maxMembers);
  assert.equal(defaultConfig().recrawl.enabled, false);
});

test('no option default is written in the command line sources', () => {
  const dir = join(ROOT, 'src', 'cli');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const src = readFileSync(join(dir, f), 'utf8');
    // Options are added from the tables only (addOptions), with defaults read from the config.
    assert.ok(!/\.option\(/.test(src), `${f}: .option() outside the tables`);
    if (f !== 'options.ts') assert.ok(!/\.default\(|new Option\(/.test(src), `${f}: commander defaults outside src/cli/options.ts`);
    // A row of the table names a setting or a fallback, never a value: no `default:` field.
    assert.ok(!/(^|[{,])\s*default\s*:/m.test(src), `${f}: a default written as a value`);
  }
});

test('docs/cli.md shows each join option\'s config default and setting, and is up to date', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
  assert.equal(doc, renderCliDoc(buildProgram()) + '\n', 'run `npm run docs:cli`');
  const section = doc.slice(doc.indexOf('## `ubicrawl join`'), doc.indexOf('## `ubicrawl keygen'));
  for (const row of JOIN_OPTIONS) {
    const line = section.split('\n').find((l) => l.startsWith(`| \`${row.flags.replace(/\|/g, '\\|')}\` |`));
    assert.ok(line, `docs/cli.md lists ${row.flags}`);
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    const def = defaultOf(row);
    const shown = row.flags.startsWith('--no-') || def === undefined || def === false || (Array.isArray(def) && def.length === 0)
      ? '' : `\`${row.show ? row.show(def) : JSON.stringify(def)}\``;
    assert.equal(cells[3], shown, `${row.flags}: default in docs/cli.md`);
    assert.equal(cells[4], `\`${row.config}\``, `${row.flags}: setting in docs/cli.md`);
  }
  assert.equal(formatDuration(30 * 86_400_000), '30d');
  assert.equal(formatDuration(90_000), '90s');
});

test('the API reports the configured capacity', async () => {
  const dir = tempDir();
  const agent = await startAgent({ dataDir: dir, logLevel: 'silent', mesh: { capacity: 3 }, api: { listen: '127.0.0.1:0' }, sitemaps: { enabled: false } });
  try {
    const token = readFileSync(join(dir, 'api.token'), 'utf8').trim();
    const res = await fetch(`${agent.apiUrl}/status`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const status = await res.json() as { agent: { capacity: number }; mesh: { members: Array<{ self: boolean; capacity: number }> } };
    assert.equal(status.agent.capacity, 3);
    assert.equal(status.mesh.members.find((m) => m.self)?.capacity, 3);
  } finally {
    await agent.stop();
  }
});
