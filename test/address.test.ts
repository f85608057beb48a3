// The address classifier and IP-literal parser (src/fetch/address.ts): pure
// functions, so every range is checked here without any traffic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import {
  AddressPolicy, classifyAddress, describeAddress, formatIPv6, parseCidr, parseIPv4Literal, parseIPv6, parseIpLiteral,
  type AddressRange, type Embedding,
} from '../src/fetch/address.js';

type Row = [address: string, range: AddressRange, embedding?: Embedding, embedded?: string];

const TABLE: Row[] = [
  // IPv4, RFC 6890 and its updates
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'this-network'],
  ['10.0.0.0', 'private'], ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['172.15.255.255', 'public'], ['172.32.0.0', 'public'],
  ['192.168.1.1', 'private'], ['192.167.255.255', 'public'], ['192.169.0.0', 'public'],
  ['100.64.0.1', 'cgnat'], ['100.127.255.255', 'cgnat'], ['100.63.255.255', 'public'], ['100.128.0.0', 'public'],
  ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['127.0.0.2', 'loopback'],
  ['169.254.169.254', 'link-local'], ['169.254.0.1', 'link-local'], ['169.253.255.255', 'public'],
  ['192.0.0.8', 'reserved'], ['192.0.2.1', 'documentation'], ['198.51.100.7', 'documentation'], ['203.0.113.200', 'documentation'],
  ['192.88.99.1', 'reserved'],
  ['198.18.0.1', 'benchmark'], ['198.19.255.255', 'benchmark'], ['198.20.0.0', 'public'],
  ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'], ['255.255.255.254', 'reserved'], ['255.255.255.255', 'broadcast'],
  ['8.8.8.8', 'public'], ['1.1.1.1', 'public'], ['93.184.216.34', 'public'], ['223.255.255.255', 'public'],
  // IPv6
  ['::', 'unspecified'], ['::1', 'loopback'], ['[::1]', 'loopback'],
  ['fc00::1', 'unique-local'], ['fd12:3456:789a::1', 'unique-local'],
  ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['febf::1', 'link-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'], ['ff0e::101', 'multicast'],
  ['100::1', 'discard'],
  ['2001:db8::1', 'documentation'], ['3fff::1', 'documentation'], ['3fff:fff::1', 'documentation'], ['3fff:1000::1', 'public'],
  ['2001:2::1', 'benchmark'],
  ['2001:10::1', 'reserved'], // ORCHID, in the IETF block 2001::/23
  ['64:ff9b:1::a00:1', 'nat64-local'],
  ['1::', 'reserved'], ['4000::1', 'reserved'], ['e000::1', 'reserved'], // outside 2000::/3
  ['2606:4700:4700::1111', 'public'], ['2a00:1450:4001::200e', 'public'], ['2001:4860::8888', 'public'],
  // IPv6 forms carrying an IPv4 address: judged by the IPv4 address
  ['::ffff:127.0.0.1', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['::ffff:7f00:1', 'loopback', 'ipv4-mapped', '127.0.0.1'],
  ['::ffff:10.1.2.3', 'private', 'ipv4-mapped', '10.1.2.3'],
  ['::ffff:169.254.169.254', 'link-local', 'ipv4-mapped', '169.254.169.254'],
  ['::ffff:8.8.8.8', 'public', 'ipv4-mapped', '8.8.8.8'],
  ['::127.0.0.1', 'loopback', 'ipv4-compatible', '127.0.0.1'],
  ['::10.0.0.1', 'private', 'ipv4-compatible', '10.0.0.1'],
  ['::8.8.8.8', 'reserved', 'ipv4-compatible', '8.8.8.8'], // deprecated (RFC 4291 §2.5.5.1): never dialled
  ['64:ff9b::10.0.0.1', 'private', 'nat64', '10.0.0.1'],
  ['64:ff9b::a9fe:a9fe', 'link-local', 'nat64', '169.254.169.254'],
  ['64:ff9b::127.0.0.1', 'loopback', 'nat64', '127.0.0.1'],
  ['64:ff9b::100.64.0.1', 'cgnat', 'nat64', '100.64.0.1'],
  ['64:ff9b::8.8.8.8', 'public', 'nat64', '8.8.8.8'],
  ['2002:a00:1::1', 'private', '6to4', '10.0.0.1'],
  ['2002:7f00:1::', 'loopback', '6to4', '127.0.0.1'],
  ['2002:808:808::1', 'public', '6to4', '8.8.8.8'],
  // Teredo: client 10.0.0.1 stored inverted (f5ff:fffe)
  ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private', 'teredo', '10.0.0.1'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'documentation', 'teredo', '192.0.2.45'],
  ['2001:0:808:808::f7f7:f7f7', 'public', 'teredo', '8.8.8.8'],
];

test('every special-purpose range is classified (IPv4, IPv6, and IPv6 forms carrying an IPv4 address)', () => {
  for (const [address, range, embedding, embedded] of TABLE) {
    const c = classifyAddress(address);
    assert.equal(c.range, range, address);
    assert.equal(c.internal, range !== 'public', address);
    assert.equal(c.embedding, embedding, address);
    assert.equal(c.embedded, embedded, address);
  }
  assert.equal(classifyAddress('example.com').range, 'not-an-address');
  assert.equal(classifyAddress('example.com').internal, true, 'what is not an address is never dialled');
});

test('IPv4 literals in every notation a URL accepts (WHATWG IPv4 parser) give the canonical address', () => {
  const same: Array<[string, string | null]> = [
    ['127.0.0.1', '127.0.0.1'], ['2130706433', '127.0.0.1'], ['0x7f000001', '127.0.0.1'], ['017700000001', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'], ['0x7f.0.0.1', '127.0.0.1'], ['0X7F.0.0.01', '127.0.0.1'], ['127.1', '127.0.0.1'],
    ['127.0.1', '127.0.0.1'], ['0x7f.1', '127.0.0.1'], ['0177.1', '127.0.0.1'], ['127.0.0.1.', '127.0.0.1'],
    ['0', '0.0.0.0'], ['0x', '0.0.0.0'], ['0x.0.0.0', '0.0.0.0'], ['3232235777', '192.168.1.1'], ['0xa9fea9fe', '169.254.169.254'],
    ['169.254.43518', '169.254.169.254'], ['10.1', '10.0.0.1'], ['4294967295', '255.255.255.255'],
    // not IPv4 literals: names, or hosts a URL refuses
    ['example.com', null], ['4294967296', null], ['1.2.3.256', null], ['256.1.1.1', null], ['08.0.0.1', null],
    ['0x1g.0.0.1', null], ['1.2.3.4.5', null], ['1..2.3', null], ['', null], ['a.1', null], ['127.0.0.1..', null],
  ];
  for (const [host, want] of same) {
    assert.equal(parseIpLiteral(host)?.address ?? null, want, host);
    // What the URL parser makes of the same host: the guard and the URL agree.
    let viaUrl: string | null;
    try { viaUrl = new URL(`http://${host}/`).hostname; } catch { viaUrl = null; }
    if (want !== null) assert.equal(viaUrl, want, `URL agrees on ${host}`);
    else if (viaUrl !== null) assert.equal(isIP(viaUrl), 0, `URL reads ${host} as a name too (${viaUrl})`);
  }
  assert.equal(parseIPv4Literal('2130706433'), 0x7f000001);
});

test('IPv6 literals: brackets, zone ids, dotted tails and compressed forms parse; RFC 5952 output', () => {
  const cases: Array<[string, string]> = [
    ['::1', '::1'], ['[::1]', '::1'], ['0:0:0:0:0:0:0:1', '::1'], ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['[::ffff:10.0.0.1]', '::ffff:a00:1'], ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'], ['FE80::1%eth0', 'fe80::1'],
    ['2001:DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], ['1:0:0:2:0:0:0:3', '1:0:0:2::3'], ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['::', '::'], ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
  ];
  for (const [text, want] of cases) {
    assert.equal(parseIpLiteral(text)?.address, want, text);
    assert.equal(parseIpLiteral(text)?.family, 6, text);
  }
  for (const bad of ['1:2:3:4:5:6:7:8:9', ':::', '1::2::3', '12345::', 'g::1', '[::1']) assert.equal(parseIPv6(bad), null, bad);
  // The URL serialiser and ours agree (both RFC 5952).
  for (const [text] of cases.filter(([t]) => !t.includes('%'))) {
    const h = text.startsWith('[') ? text : `[${text}]`;
    assert.equal(new URL(`http://${h}/`).hostname, `[${parseIpLiteral(text)!.address}]`, text);
  }
  assert.equal(formatIPv6([0, 0, 1, 0, 0, 1, 0, 0]), '::1:0:0:1:0:0');
});

test('CIDR allow-list entries: v4, v6, brackets, bare addresses; bad ones are usage errors', () => {
  assert.deepEqual(parseCidr('10.0.0.0/8'), { address: '10.0.0.0', prefix: 8, family: 4 });
  assert.deepEqual(parseCidr('::1/128'), { address: '::1', prefix: 128, family: 6 });
  assert.deepEqual(parseCidr('[fd00::]/8'), { address: 'fd00::', prefix: 8, family: 6 });
  assert.deepEqual(parseCidr('127.0.0.1'), { address: '127.0.0.1', prefix: 32, family: 4 });
  for (const bad of ['10.0.0.0/33', '::/129', 'example.com/8', '10.0.0.0/x', '2130706433/8', '10.0.0.0/', '']) {
    assert.throws(() => parseCidr(bad), /--allow-address/, bad);
  }
});

test('the policy: internal refused with a reason, allowed ranges open, mapped and NAT64 forms follow their IPv4 address', () => {
  const none = new AddressPolicy();
  assert.equal(none.check('8.8.8.8'), null);
  assert.equal(none.check('2606:4700:4700::1111'), null);
  const b = none.check('169.254.169.254');
  assert.equal(b?.class.range, 'link-local');
  assert.match(b!.reason, /169\.254\.169\.254 is link-local \(RFC 3927/);
  assert.match(none.check('::ffff:a00:1')!.reason, /ipv4-mapped 10\.0\.0\.1, private \(RFC 1918\)/);
  assert.ok(none.check('not an address'), 'a non-address is refused');
  for (const a of ['127.0.0.1', '::1', '10.0.0.1', '100.64.1.1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '64:ff9b::a00:1', '0.0.0.0', '::']) {
    assert.ok(none.check(a), `${a} refused by default`);
  }
  const p = new AddressPolicy(['127.0.0.0/8', '::1/128', '10.1.0.0/16']);
  for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '64:ff9b::7f00:1', '10.1.2.3']) assert.equal(p.check(a), null, `${a} allowed`);
  for (const a of ['10.2.0.1', '192.168.0.1', 'fd00::1', 'fe80::1', '169.254.169.254']) assert.ok(p.check(a), `${a} still refused`);
  // Verdicts are remembered per address; the second answer is the same object.
  assert.equal(p.check('10.2.0.1'), p.check('10.2.0.1'));
  assert.equal(describeAddress('8.8.8.8'), '8.8.8.8 is public');
});
