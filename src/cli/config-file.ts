// `--config crawl.yaml` (or .json) and `ubicrawl config print` (docs/requests.md
// "Config file"). A file's keys are the long option names of `join` (the options
// table of ./options.ts, so the file, the command line and docs/cli.md cannot
// drift), and each value goes through the option's own parser: a file is
// refused exactly where the command line would be. Options given on the command
// line win over the file.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Command } from 'commander';
import { attributeOf, toAgentOptions, JOIN_OPTIONS, type CliOption, type ParsedOptions } from './options.js';
import { UsageError } from './seeds.js';
import { configValue, resolveConfig, DEFAULT_DNS_CONFIG, type ConfigPath } from '../config.js';
import { politenessConfig } from '../politeness/host.js';
import { proxyPlan, redactProxy, type ProxyPlan } from '../fetch/proxy.js';

/** A row's key in a config file: its long option name without dashes or `no-` ('--max-depth <n>' → max-depth, '--no-warc' → warc). */
export function fileKeyOf(row: CliOption): string {
  return /--(?:no-)?([a-z0-9-]+)/.exec(row.flags)![1]!;
}

const isFlag = (row: CliOption): boolean => !/[<[]/.test(row.flags);
const CONFIG_KEY = 'config';

/** The file's mapping of keys to values; one-line UsageErrors for an unreadable or malformed file. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (err) {
    throw new UsageError(`cannot read the config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const ext = extname(path).toLowerCase();
  let data: unknown;
  if (ext === '.json') {
    try { data = JSON.parse(text); } catch (err) { throw new UsageError(`${path}: not valid JSON: ${(err as Error).message}`); }
  } else if (ext === '.yaml' || ext === '.yml') {
    // YAML 1.2 core schema: `yes`/`no` are strings, so a flag must say true or false.
    try { data = parseYaml(text, { uniqueKeys: true, prettyErrors: false }); } catch (err) {
      throw new UsageError(`${path}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
  } else {
    throw new UsageError(`${path}: a config file ends in .yaml, .yml or .json`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new UsageError(`${path}: expected a mapping of option names to values (e.g. max-depth: 2)`);
  return data as Record<string, unknown>;
}

/** The nearest key, for "did you mean": camelCase or `--` spellings first, then by edit distance (at most 3). */
function suggest(key: string, keys: readonly string[]): string | undefined {
  const spelled = key.replace(/^--?/, '').replace(/^no-/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`).replace(/_/g, '-');
  if (keys.includes(spelled)) return spelled;
  let best: string | undefined;
  let bestD = 4;
  for (const k of keys) {
    const d = editDistance(key, k);
    if (d < bestD) { best = k; bestD = d; }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** A file value as the option's value: the same parser, choices and checks as on the command line. */
function optionValue(row: CliOption, key: string, value: unknown, path: string): unknown {
  const bad = (why: string) => new UsageError(`${path}: ${key}: ${why}`);
  const scalar = (v: unknown): string => {
    if (typeof v === 'string') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    throw bad(`expected ${isFlag(row) ? 'true or false' : 'a string or a number'}, got ${JSON.stringify(v) ?? String(v)}`);
  };
  const parse = (text: string, previous: unknown): unknown => {
    if (row.choices && !row.choices.includes(text)) throw bad(`'${text}' is not one of ${row.choices.join(', ')}`);
    if (!row.parse) return row.repeatable ? [...(previous as unknown[]), text] : text;
    try { return (row.parse as (v: string, p: unknown) => unknown)(text, previous); } catch (err) { throw bad((err as Error).message); }
  };
  if (isFlag(row)) {
    if (typeof value !== 'boolean') throw bad(`expected true or false, got ${JSON.stringify(value) ?? String(value)}`);
    return value;
  }
  if (row.repeatable) {
    let acc: unknown = [];
    for (const item of Array.isArray(value) ? value : [value]) acc = parse(scalar(item), acc);
    return acc;
  }
  if (Array.isArray(value)) throw bad('takes one value, not a list');
  return parse(scalar(value), undefined);
}

/**
 * Reads `path` and sets its values as `cmd`'s options where the command line
 * gave none (source 'config'). Every key and value is checked, also those the
 * command line overrides.
 */
export function applyConfigFile(cmd: Command, rows: readonly CliOption[], path: string): void {
  const data = readConfigFile(path);
  const byKey = new Map(rows.filter((r) => fileKeyOf(r) !== CONFIG_KEY).map((r) => [fileKeyOf(r), r] as const));
  for (const [key, value] of Object.entries(data)) {
    if (key === CONFIG_KEY) throw new UsageError(`${path}: config: a config file cannot name another`);
    const row = byKey.get(key);
    if (!row) {
      const near = suggest(key, [...byKey.keys()]);
      throw new UsageError(`${path}: unknown key '${key}'${near ? ` (did you mean '${near}'?)` : ''}; the keys are join's long option names (ubicrawl join --help)`);
    }
    const parsed = optionValue(row, key, value, path);
    const attr = attributeOf(row.flags);
    if (cmd.getOptionValueSource(attr) === 'cli') continue;
    cmd.setOptionValueWithSource(attr, parsed, 'config');
  }
}

// ---------------------------------------------------------------- config print

export interface PrintedSetting {
  key: string;
  /** As a config file would hold it (durations as 1h, --resolve rules as host:port:addr); undefined: not set. */
  value: unknown;
  /** default, command line, file PATH, env NAME (or several, joined by ' + '). */
  source: string;
  setting?: ConfigPath;
}

/** Header fields whose values are credentials: shown as *** by `config print`. */
const SECRET_FIELDS = /^(authorization|cookie)\s*:/i;

function printable(row: CliOption, value: unknown): unknown {
  const one = (v: unknown): unknown => {
    if (row.show && typeof v === 'number') return row.show(v);
    if (v && typeof v === 'object' && 'address' in v && 'host' in v && 'port' in v) {
      const r = v as { host: string; port: number; address: string };
      return `${r.host}:${r.port}:${r.address.includes(':') ? `[${r.address}]` : r.address}`;
    }
    if (typeof v === 'string' && SECRET_FIELDS.test(v)) return `${v.slice(0, v.indexOf(':'))}: ***`;
    return v;
  };
  // A one-value option whose setting is a list or a record (--media, --max-media-bytes) prints as its own syntax.
  if (row.show && !row.repeatable && typeof value === 'object' && value !== null) return row.show(value);
  return Array.isArray(value) ? value.map(one) : one(value);
}

/**
 * Each option of `rows` with its effective value and where it came from. `effective`
 * completes what an option leaves to the settings (a repeatable option given no value);
 * `proxy` says what the environment adds.
 */
export function effectiveSettings(cmd: Command, rows: readonly CliOption[], effective: object, proxy: ProxyPlan | undefined, configPath?: string): PrintedSetting[] {
  const opts = cmd.opts();
  const out: PrintedSetting[] = [];
  for (const row of rows) {
    if (fileKeyOf(row) === CONFIG_KEY) continue; // the file itself: named in the header
    const attr = attributeOf(row.flags);
    const src = cmd.getOptionValueSource(attr);
    let source = src === 'cli' ? 'command line' : src === 'config' ? `file ${configPath}` : 'default';
    let value = opts[attr];
    if (row.repeatable && Array.isArray(value) && value.length === 0 && row.config) value = configValue(effective, row.config);
    const key = fileKeyOf(row);
    if (key === 'proxy' && proxy) {
      const { http, https } = proxy;
      if (value === undefined && (http || https)) {
        // From the environment: one line per scheme when they differ.
        const shown = [...new Set([http, https].filter((c) => c !== undefined))];
        value = shown.length === 1 ? redactProxy(shown[0]!.url) : shown.map((c) => `${redactProxy(c.url)} (${c === http ? 'http' : 'https'})`).join(', ');
        source = shown.map((c) => c.from).join(' + ');
      } else if (typeof value === 'string') {
        value = redactProxy(new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`));
      }
    }
    if (key === 'noproxy' && proxy) {
      const env = proxy.noProxyFrom.filter((f) => f.startsWith('env '));
      if (env.length) {
        source = (source === 'default' ? env : [source, ...env]).join(' + ');
        value = proxy.noProxyList;
      }
    }
    out.push({ key, value: value === undefined ? undefined : printable(row, value), source, ...(row.config ? { setting: row.config } : {}) });
  }
  return out;
}

/** `key: value  # source` lines: a YAML file a later --config can read (unset options commented out). */
export function formatSettings(settings: readonly PrintedSetting[], header: string): string {
  const width = Math.max(...settings.map((s) => s.key.length + (s.value === undefined ? 0 : JSON.stringify(s.value).length)));
  const lines = [`# ${header}`];
  for (const s of settings) {
    const text = s.value === undefined ? `# ${s.key}:` : `${s.key}: ${JSON.stringify(s.value)}`;
    lines.push(`${text.padEnd(width + 4)}  # ${s.value === undefined ? 'not set' : s.source}`);
  }
  return lines.join('\n') + '\n';
}

/** `ubicrawl config print`: `join`'s options (`all`, the file applied) as `join` would run with them, text or `--json`. */
export function printConfig(cmd: Command, all: ParsedOptions, env: Readonly<Record<string, string | undefined>>): string {
  const options = toAgentOptions(all);
  const effective = resolveConfig({ ...options, mesh: { ...options.mesh, enabled: true } });
  let proxy: ProxyPlan | undefined;
  try { proxy = proxyPlan(effective.requests, env); } catch (err) { throw new UsageError((err as Error).message); }
  // The sections the modules complete, completed as they do.
  const complete = { ...effective, politeness: politenessConfig(effective), dns: { ...DEFAULT_DNS_CONFIG, ...effective.dns } };
  const path = all.config as string | undefined;
  const settings = effectiveSettings(cmd, JOIN_OPTIONS, complete, proxy, path);
  if (all.json) return JSON.stringify(Object.fromEntries(settings.map(({ key, ...rest }) => [key, rest])), null, 2) + '\n';
  return formatSettings(settings, `ubicrawl join: effective configuration${path ? ` with ${path}` : ''} (key: value  # where it came from)`);
}
