// The crawl scope as a pure function (src/scope/crawl-scope.ts, docs/scope.md):
// registrable domains by the Public Suffix List, the four modes, allowed hosts,
// the lineage rule, URL filters, depth, accepted media types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildProgram } from '../src/cli/main.js';
import { toAgentOptions } from '../src/cli/options.js';
import { resolveConfig, DEFAULT_CRAWL_SCOPE } from '../src/config.js';
import { CrawlScope, asciiHost, registrableDomain, scopeUnit, typeAccepted, type CrawlScopeConfig } from '../src/scope/crawl-scope.js';

const scope = (c: Partial<CrawlScopeConfig>, seeds: string[] = []): CrawlScope => {
  const s = new CrawlScope({ mode: 'seeds', allowHosts: [], include: [], exclude: [], maxDepth: 0, ...c });
  for (const h of seeds) s.addSeed(h);
  return s;
};

test('registrable domains come from the Public Suffix List, private section included', () => {
  assert.equal(registrableDomain('a.b.example.co.uk'), 'example.co.uk');
  assert.equal(registrableDomain('example.co.uk'), 'example.co.uk');
  assert.equal(registrableDomain('docs.example.org'), 'example.org');
  assert.equal(registrableDomain('foo.github.io'), 'foo.github.io', 'a private suffix: each site its own');
  assert.equal(registrableDomain('h3.web.test'), 'web.test', 'an unlisted TLD: the default rule');
  // A host without one is its own unit.
  assert.equal(registrableDomain('co.uk'), 'co.uk');
  assert.equal(registrableDomain('localhost'), 'localhost');
  assert.equal(registrableDomain('127.0.0.1'), '127.0.0.1');
  assert.equal(registrableDomain('[::1]'), '[::1]');
  // IDNs, as the normalised URL writes them (punycode).
  assert.equal(registrableDomain('www.xn--bcher-kva.de'), 'xn--bcher-kva.de');
  assert.equal(asciiHost('Bücher.DE.'), 'xn--bcher-kva.de');
  assert.equal(scopeUnit('seeds', 'a.b.example.co.uk'), 'example.co.uk');
  assert.equal(scopeUnit('domain', 'a.b.example.co.uk'), 'a.b.example.co.uk');
  assert.equal(scopeUnit('host', 'a.b.example.co.uk'), 'a.b.example.co.uk');
  assert.equal(scopeUnit('web', 'a.b.example.co.uk'), null);
});

test('the four modes, for the seed docs.example.co.uk', () => {
  const hosts = ['docs.example.co.uk', 'api.docs.example.co.uk', 'www.example.co.uk', 'example.co.uk', 'other.co.uk', 'example.org'];
  const inScope = (mode: CrawlScopeConfig['mode']) => hosts.filter((h) => scope({ mode }, ['docs.example.co.uk']).hostInScope(h));
  assert.deepEqual(inScope('seeds'), ['docs.example.co.uk', 'api.docs.example.co.uk', 'www.example.co.uk', 'example.co.uk']);
  assert.deepEqual(inScope('domain'), ['docs.example.co.uk', 'api.docs.example.co.uk']);
  assert.deepEqual(inScope('host'), ['docs.example.co.uk']);
  assert.deepEqual(inScope('web'), hosts);
  // No seed known: nothing but a page's own unit (below).
  assert.equal(scope({}).hostInScope('example.org'), false);
});

test('IP hosts are their own unit; a seed added later widens the scope', () => {
  const s = scope({}, ['127.0.0.1']);
  assert.equal(s.hostInScope('127.0.0.1'), true);
  assert.equal(s.hostInScope('127.0.0.2'), false);
  assert.equal(s.addSeed('[::1]'), true);
  assert.equal(s.addSeed('[::1]'), false, 'known already');
  assert.equal(s.hostInScope('[::1]'), true);
  assert.equal(s.hostInScope('www.example.org'), false);
  s.addSeed('example.org');
  assert.equal(s.hostInScope('www.example.org'), true);
  assert.deepEqual(s.seedUnits(), ['127.0.0.1', '[::1]', 'example.org']);
});

test('allowed hosts: exact names and *.suffix, IDNs in either spelling; they do not bring their own links in', () => {
  const s = scope({ allowHosts: ['cdn.example.net', '*.static.test', 'Bücher.example'] }, ['example.org']);
  assert.equal(s.hostInScope('cdn.example.net'), true);
  assert.equal(s.hostInScope('www.example.net'), false);
  assert.equal(s.hostInScope('a.static.test'), true);
  assert.equal(s.hostInScope('static.test'), false, '*.suffix: names under it');
  assert.equal(s.hostInScope('xn--bcher-kva.example'), true);
  // Found on the allowed host's page: its registrable domain is not in scope for that.
  assert.equal(s.hostInScope('www.example.net', 'cdn.example.net'), false);
  assert.equal(s.hostInScope('www.example.org', 'cdn.example.net'), true, 'a seed unit is, wherever the link is');
});

test('lineage: a link in the unit of the page it was found on is in scope on an agent that was never told the seed', () => {
  const seeds = scope({});
  assert.equal(seeds.hostInScope('blog.example.org', 'www.example.org'), true);
  assert.equal(seeds.hostInScope('example.com', 'www.example.org'), false);
  const domain = scope({ mode: 'domain' });
  assert.equal(domain.hostInScope('api.docs.example.org', 'docs.example.org'), true);
  assert.equal(domain.hostInScope('www.example.org', 'docs.example.org'), false);
  const host = scope({ mode: 'host' });
  assert.equal(host.hostInScope('docs.example.org', 'docs.example.org'), true);
  assert.equal(host.hostInScope('www.docs.example.org', 'docs.example.org'), false);
});

test('filters: exclude wins over include, both on the normalised URL; depth counts link hops', () => {
  const s = scope({ include: ['/docs/', '\\.pdf$'], exclude: ['/docs/old/'], maxDepth: 2 });
  assert.equal(s.filter('https://example.org/docs/a', 1), null);
  assert.equal(s.filter('https://example.org/x.pdf', 2), null);
  assert.equal(s.filter('https://example.org/docs/old/a', 1), 'url-excluded');
  assert.equal(s.filter('https://example.org/blog/', 1), 'url-not-included');
  assert.equal(s.filter('https://example.org/docs/a', 3), 'max-depth');
  assert.equal(scope({ maxDepth: 0 }).filter('https://example.org/', 1e6), null, '0: no limit');
  assert.equal(s.check('https://example.com/docs/a', 'example.com', 1), 'out-of-scope');
  assert.throws(() => scope({ include: ['(unclosed'] }), /--include: not a regular expression: \(unclosed/);
  assert.throws(() => scope({ mode: 'everything' as never }), /scope must be one of seeds, domain, host, web/);
});

test('accepted media types: exact, type/*, */*, parameters ignored; empty accepts all', () => {
  assert.equal(typeAccepted([], 'application/pdf'), true);
  assert.equal(typeAccepted(['text/html'], 'text/html; charset=utf-8'), true);
  assert.equal(typeAccepted(['text/html'], 'TEXT/HTML'), true);
  assert.equal(typeAccepted(['text/html'], 'application/xhtml+xml'), false);
  assert.equal(typeAccepted(['image/*'], 'image/png'), true);
  assert.equal(typeAccepted(['image/*'], 'text/plain'), false);
  assert.equal(typeAccepted(['*/*'], undefined), true);
  assert.equal(typeAccepted(['text/html'], undefined), false, 'no type: not one of them');
});

test('the join options set the crawlScope settings; without them the defaults hold (seeds, no filter, no limit)', () => {
  const parse = (args: string[]) => {
    const program = buildProgram();
    const join = program.commands.find((c) => c.name() === 'join')!;
    join.action(() => {});
    program.exitOverride();
    join.exitOverride();
    program.parse(['join', ...args], { from: 'user' });
    return resolveConfig(toAgentOptions(join.opts())).crawlScope;
  };
  assert.deepEqual(parse([]), { ...DEFAULT_CRAWL_SCOPE });
  assert.equal(DEFAULT_CRAWL_SCOPE.mode, 'seeds');
  assert.deepEqual(parse([
    '--scope', 'host', '--allow-host', 'cdn.example.net', '--allow-host', '*.static.test', '--include', '/docs/', '--exclude', '/old/',
    '--max-depth', '3', '--max-pages-per-host', '100', '--accept-type', 'Text/HTML', '--accept-type', 'image/*',
  ]), {
    mode: 'host', allowHosts: ['cdn.example.net', '*.static.test'], include: ['/docs/'], exclude: ['/old/'],
    maxDepth: 3, maxPagesPerHost: 100, acceptTypes: ['text/html', 'image/*'],
  });
});
