// Host strings at the edges (src/url/host.ts): brackets of an IPv6 literal off
// for sockets and DNS, the port off for the ring key and the scope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostWithoutPort, unbracketHost } from '../src/url/host.js';
import { ringHostName } from '../src/assign/ring.js';
import { parseResolveRule } from '../src/config.js';
import { isLoopbackHost } from '../src/api/server.js';
import { parseCidr } from '../src/fetch/address.js';

test('unbracketHost: an IPv6 literal loses its brackets; anything else is kept', () => {
  assert.equal(unbracketHost('[::1]'), '::1');
  assert.equal(unbracketHost('[fe80::1%25eth0]'), 'fe80::1%25eth0');
  for (const h of ['::1', 'example.com', '127.0.0.1', '', '[', ']', '[::1', '::1]', 'a[b]']) assert.equal(unbracketHost(h), h, h);
});

test('hostWithoutPort: host:port, [v6]:port and bare IPv6 literals', () => {
  assert.equal(hostWithoutPort('Example.com:8080'), 'Example.com');
  assert.equal(hostWithoutPort('example.com'), 'example.com');
  assert.equal(hostWithoutPort('[::1]:443'), '[::1]');
  assert.equal(hostWithoutPort('[::1]'), '[::1]');
  assert.equal(hostWithoutPort('::1'), '::1', 'several colons, no brackets: a bare IPv6 literal, kept whole');
  assert.equal(hostWithoutPort('[::1'), '[::1', 'no closing bracket: kept');
});

test('the callers agree: ring key, --resolve, loopback check, --allow-address', () => {
  assert.equal(ringHostName('Example.COM:8080'), 'example.com');
  assert.equal(ringHostName('[::1]:443'), '[::1]');
  assert.equal(parseResolveRule('h.test:443:[::1]').address, '::1');
  assert.equal(parseResolveRule('h.test:443:127.0.0.1').address, '127.0.0.1');
  assert.equal(isLoopbackHost('[::1]'), true);
  assert.equal(isLoopbackHost('[::2]'), false);
  assert.deepEqual(parseCidr('[::1]/128'), parseCidr('::1/128'));
});
