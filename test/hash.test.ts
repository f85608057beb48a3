import { test } from 'node:test';
import assert from 'node:assert/strict';
import { xxh64, xxh64Hex, xxh64Bytes } from '../src/hash/xxhash.js';

test('xxh64 matches the reference vector for "abc" (xxHash spec, seed 0)', () => {
  // Known-answer value of XXH64("abc", 0) = 0x44bc2cf5ad770999.
  assert.equal(xxh64('abc'), 0x44bc2cf5ad770999n);
  assert.equal(xxh64Hex('abc'), '44bc2cf5ad770999');
  assert.equal(xxh64Bytes(new TextEncoder().encode('abc')), 0x44bc2cf5ad770999n);
});
