// `join --config FILE` and `ubicrawl config print` (docs/requests.md "Config file"):
// the file's keys are join's long option names, the command line wins, a bad key
// or value is one line and exit code 2 — through real child processes of bin/ubicrawl.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { linking, startSite, type Site } from './site-fixture.js';
import { BIN, cleanEnv, runCli, tempDir, type CliRun } from './helpers.js';

type Run = CliRun;

function runSync(args: string[], env: Record<string, string> = {}): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000, env: cleanEnv(env) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Six pages in a chain of depth 3 with a side branch; /private/ excluded below. */
const PAGES = {
  '/': linking('/a', '/private/x'),
  '/a': linking('/b', '/c'),
  '/b': linking('/d'),
  '/c': linking(),
  '/d': linking(),
  '/private/x': linking(),
};

/** What a crawl did, as the site saw it: each path with the header of the options. */
const seenBy = (site: Site) => site.requests.map((r) => `${r.path} ${String(r.headers['x-run'])}`).sort();

test('a config file (YAML or JSON) and the same options on the command line give the same crawl; the command line wins over the file', async () => {
  const sites: Site[] = [];
  try {
    const dir = tempDir();
    const crawlOf = async (name: string, args: (site: Site) => string[]): Promise<{ site: Site; summary: Record<string, unknown> }> => {
      const site = await startSite(PAGES);
      sites.push(site);
      const run = await runCli(['join', '--data-dir', join(dir, name), ...args(site)]);
      assert.equal(run.code, 0, `${name}: ${run.stderr}`);
      return { site, summary: JSON.parse(run.stdout) as Record<string, unknown> };
    };
    const common = (site: Site) => ({
      seed: [`http://site.test:${site.port}/`], resolve: [`site.test:${site.port}:127.0.0.1`], 'max-depth': 2, exclude: ['/private/'],
      header: ['X-Run: same'], 'until-idle': true, 'min-delay': 10, 'delay-factor': 0, sitemaps: false, warc: false,
      progress: 'off', 'log-level': 'warn', listen: ['/ip4/127.0.0.1/tcp/0'],
    });
    const options = await crawlOf('options', (site) => [
      '--seed', `http://site.test:${site.port}/`, '--resolve', `site.test:${site.port}:127.0.0.1`, '--max-depth', '2', '--exclude', '/private/',
      '--header', 'X-Run: same', '--until-idle', '--min-delay', '10', '--delay-factor', '0', '--no-sitemaps', '--no-warc',
      '--progress', 'off', '--log-level', 'warn', '--listen', '/ip4/127.0.0.1/tcp/0',
    ]);
    const yaml = await crawlOf('yaml', (site) => {
      const file = join(dir, 'crawl.yaml');
      const c = common(site);
      writeFileSync(file, [
        '# a crawl of one site',
        `seed:\n  - ${c.seed[0]}`, `resolve: [${c.resolve[0]}]`, 'max-depth: 2', "exclude: '/private/'", 'header: "X-Run: same"',
        'until-idle: true', 'min-delay: 10', 'delay-factor: 0', 'sitemaps: false', 'warc: false', 'progress: off', 'log-level: warn',
        'listen: /ip4/127.0.0.1/tcp/0', '',
      ].join('\n'));
      return ['--config', file];
    });
    const json = await crawlOf('json', (site) => {
      const file = join(dir, 'crawl.json');
      writeFileSync(file, JSON.stringify(common(site), null, 2));
      return ['--config', file];
    });
    // The file says depth 5 and another header; the command line says otherwise, and wins.
    const override = await crawlOf('override', (site) => {
      const file = join(dir, 'override.json');
      writeFileSync(file, JSON.stringify({ ...common(site), 'max-depth': 5, header: ['X-Run: file'] }));
      return ['--config', file, '--max-depth', '2', '--header', 'X-Run: same'];
    });
    const expected = ['/ same', '/a same', '/b same', '/c same', '/robots.txt same'];
    assert.deepEqual(seenBy(options.site), expected, 'depth 2, /private/ excluded, the header on every request');
    for (const run of [yaml, json, override]) {
      assert.deepEqual(seenBy(run.site), expected);
      assert.equal(run.summary.pages, options.summary.pages);
      assert.deepEqual(run.summary.rejected, options.summary.rejected);
    }
  } finally {
    for (const s of sites) await s.close();
  }
});

test('bad keys and bad values in a config file: one line naming the file and the key, exit code 2, nothing started', () => {
  const dir = tempDir();
  const cases: Array<[string, string, RegExp]> = [
    ['typo.yaml', 'max-dpeth: 2\n', /typo\.yaml: unknown key 'max-dpeth' \(did you mean 'max-depth'\?\)/],
    ['camel.yaml', 'maxDepth: 2\n', /unknown key 'maxDepth' \(did you mean 'max-depth'\?\)/],
    ['number.json', '{"max-depth": "two"}', /number\.json: max-depth: --max-depth must be a whole number/],
    ['choice.yaml', 'scope: galaxy\n', /scope: 'galaxy' is not one of seeds, domain, host, web/],
    ['flag.yaml', 'warc: no\n', /warc: expected true or false, got "no"/],
    ['list.yaml', 'max-pages: [1, 2]\n', /max-pages: takes one value, not a list/],
    ['header.yaml', 'header: "Connection: close"\n', /header: --header Connection is not allowed: a hop-by-hop field/],
    ['proxy.yaml', 'proxy: socks5://127.0.0.1:1080\n', /proxy: --proxy: only http:\/\/ and https:\/\/ proxies/],
    ['regex.yaml', "include: '(['\n", /include: /],
    ['nested.yaml', 'config: other.yaml\n', /config: a config file cannot name another/],
    ['broken.yaml', 'seed: [1\n', /broken\.yaml: not valid YAML/],
    ['broken.json', '{"seed": ', /broken\.json: not valid JSON/],
    ['list-top.yaml', '- max-depth: 2\n', /expected a mapping of option names to values/],
    ['crawl.toml', 'max-depth = 2\n', /a config file ends in \.yaml, \.yml or \.json/],
  ];
  for (const [name, text, why] of cases) {
    const file = join(dir, name);
    writeFileSync(file, text);
    const r = runSync(['join', '--config', file, '--data-dir', join(dir, 'data'), '--progress', 'off']);
    assert.equal(r.code, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, why, name);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${name}: one line: ${r.stderr}`);
    assert.equal(r.stdout, '', name);
  }
  const missing = runSync(['join', '--config', join(dir, 'absent.yaml')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read the config file .*absent\.yaml: ENOENT/);
  // config print refuses the same file the same way.
  const print = runSync(['config', 'print', '--config', join(dir, 'typo.yaml')]);
  assert.equal(print.code, 2);
  assert.match(print.stderr, /unknown key 'max-dpeth'/);
});

test('config print: each key with its value and where it came from (default, file, command line, env); its output is a config file', () => {
  const dir = tempDir();
  const file = join(dir, 'crawl.yaml');
  writeFileSync(file, 'seed: [https://example.org/]\nmax-depth: 3\nmax-duration: 90s\nwarc: false\nheader: ["X-A: 1", "Authorization: Bearer s3cret"]\nresolve: ["example.org:443:127.0.0.1"]\n');
  const env = { HTTP_PROXY: 'http://user:pw@127.0.0.1:3128', NO_PROXY: 'intranet.test' };
  const r = runSync(['config', 'print', '--config', file, '--max-depth', '4', '--cookies', '--noproxy', 'skip.test'], env);
  assert.equal(r.code, 0, r.stderr);
  const line = (key: string) => r.stdout.split('\n').find((l) => l.startsWith(`${key}:`) || l.startsWith(`# ${key}:`));
  assert.match(line('seed')!, new RegExp(`^seed: \\["https://example.org/"\\] +# file ${file.replace(/[.]/g, '\\.')}$`));
  assert.match(line('max-depth')!, /^max-depth: 4 +# command line$/);
  assert.match(line('max-duration')!, /^max-duration: "90s" +# file /);
  assert.match(line('warc')!, /^warc: false +# file /);
  assert.match(line('cookies')!, /^cookies: true +# command line$/);
  assert.match(line('scope')!, /^scope: "seeds" +# default$/);
  assert.match(line('concurrency')!, /^concurrency: 32 +# default$/);
  assert.match(line('resolve')!, /^resolve: \["example\.org:443:127\.0\.0\.1"\] +# file /);
  assert.match(line('header')!, /^header: \["X-A: 1","Authorization: \*\*\*"\] +# file /, 'credentials are not printed');
  assert.match(line('proxy')!, /^proxy: "http:\/\/user:\*\*\*@127\.0\.0\.1:3128" +# env HTTP_PROXY$/);
  assert.match(line('noproxy')!, /^noproxy: \["skip\.test","intranet\.test"\] +# command line \+ env NO_PROXY$/);
  assert.match(line('operator')!, /^# operator: +# not set$/);
  assert.ok(!r.stdout.includes('s3cret') && !r.stdout.includes(':pw@'));

  // The JSON form says the same, with the setting each key sets.
  const j = runSync(['config', 'print', '--config', file, '--max-depth', '4', '--json'], env);
  const parsed = JSON.parse(j.stdout) as Record<string, { value: unknown; source: string; setting?: string }>;
  assert.deepEqual(parsed['max-depth'], { value: 4, source: 'command line', setting: 'crawlScope.maxDepth' });
  assert.deepEqual(parsed['proxy-env'], { value: true, source: 'default', setting: 'requests.proxyFromEnv' });

  // Printed without secrets or the environment, the output is a config file that prints the same values again.
  const plain = runSync(['config', 'print', '--max-depth', '2', '--scope', 'host', '--recrawl-min', '2h', '--until-idle', '--no-dedup']);
  const again = join(dir, 'printed.yaml');
  writeFileSync(again, plain.stdout);
  const reprint = runSync(['config', 'print', '--config', again]);
  assert.equal(reprint.code, 0, reprint.stderr);
  const values = (out: string) => out.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.replace(/\s+#.*$/, ''));
  assert.deepEqual(values(reprint.stdout), values(plain.stdout));
  assert.match(reprint.stdout, /^recrawl-min: "2h" +# file /m);
  assert.match(reprint.stdout, /^dedup: false +# file /m);
});
