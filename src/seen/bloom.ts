// In-memory filters over 16-byte seen keys (host hash ‖ url hash, both
// xxhash64, src/store/keys.ts). The keys are already uniform hashes, so the
// probe positions are taken from their bits: no hashing in the hot path.
//
// KeyBloom: a scalable (Almeida, Baquero, Preguiça, Hutchison 2007, "Scalable
// Bloom filters"), cache-blocked (Putze, Sanders, Singler 2007, "Cache-,
// hash- and space-efficient Bloom filters") Bloom filter. Every probe of one
// key falls in one 64-byte block (one cache miss per layer instead of k);
// when a layer reaches its capacity a layer twice as large is added, so the
// filter grows with the seen-set without ever being rebuilt in place. It can
// only answer "definitely absent" or "maybe": the store stays the authority.
//
// KeySet: an exact set of 16-byte keys in typed arrays (open addressing,
// linear probing), so a cache of a few hundred thousand keys costs a few MB
// and no garbage-collected objects.

/** Key words as read big-endian from the 16 key bytes: a = bytes 0–3 … d = 12–15. */
function word(key: Uint8Array, at: number): number {
  return ((key[at]! << 24) | (key[at + 1]! << 16) | (key[at + 2]! << 8) | key[at + 3]!) >>> 0;
}

/** Murmur3's 32-bit finaliser: spreads any input over all bits. */
function fmix(h: number): number {
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Two 32-bit hashes of a key. For 16-byte keys they come straight from the
 * url-hash half mixed with the host-hash half; any other length (not produced
 * by this project, but tolerated) is folded byte by byte.
 */
function keyHashes(key: Uint8Array, out: Uint32Array): void {
  if (key.length === 16) {
    out[0] = fmix(word(key, 12) ^ word(key, 4));
    out[1] = fmix(word(key, 8) ^ Math.imul(word(key, 0), 0x9e3779b1));
    return;
  }
  let h1 = 0x811c9dc5, h2 = key.length;
  for (let i = 0; i < key.length; i++) {
    h1 = Math.imul(h1 ^ key[i]!, 0x01000193);
    h2 = Math.imul(h2 + key[i]!, 0x5bd1e995) ^ (h2 >>> 15);
  }
  out[0] = fmix(h1);
  out[1] = fmix(h2);
}

const WORDS_PER_BLOCK = 16; // 512 bits = one 64-byte cache line

class BlockedLayer {
  readonly bits: Uint32Array;
  readonly blocks: number;
  count = 0;
  constructor(readonly capacity: number, bitsPerKey: number, readonly k: number) {
    this.blocks = Math.max(1, Math.ceil((capacity * bitsPerKey) / 512));
    this.bits = new Uint32Array(this.blocks * WORDS_PER_BLOCK);
  }

  /** Block of a key: h1 scaled to [0, blocks) (Lemire's multiply-shift; exact: h1 · blocks < 2^53). */
  private base(h1: number): number {
    return Math.floor((h1 * this.blocks) / 4294967296) * WORDS_PER_BLOCK;
  }

  add(h1: number, h2: number): void {
    const base = this.base(h1);
    const bits = this.bits;
    // Enhanced double hashing inside the 512-bit block (Dillinger & Manolios
    // 2004, "Bloom filters in probabilistic verification"): the step grows by
    // i each probe, which breaks the a + i·b pattern's collisions.
    let pos = h2 >>> 23;
    let b = ((h2 >>> 14) & 511) | 1;
    for (let i = 0; i < this.k; i++) {
      bits[base + (pos >>> 5)] |= 1 << (pos & 31);
      pos = (pos + b) & 511;
      b = (b + i + 1) & 511;
    }
    this.count++;
  }

  has(h1: number, h2: number): boolean {
    const base = this.base(h1);
    const bits = this.bits;
    let pos = h2 >>> 23;
    let b = ((h2 >>> 14) & 511) | 1;
    for (let i = 0; i < this.k; i++) {
      if ((bits[base + (pos >>> 5)]! & (1 << (pos & 31))) === 0) return false;
      pos = (pos + b) & 511;
      b = (b + i + 1) & 511;
    }
    return true;
  }
}

export interface KeyBloomOptions {
  /** Bits per key of each layer (default 10: ≈ 1 % false "maybe" per full layer). */
  bitsPerKey?: number;
  /** Keys the first layer holds before a second one is added (default 1 Mi). */
  initialCapacity?: number;
}

export class KeyBloom {
  private readonly layers: BlockedLayer[] = [];
  private readonly bitsPerKey: number;
  private readonly k: number;
  private readonly h = new Uint32Array(2);

  constructor(opts: KeyBloomOptions = {}) {
    this.bitsPerKey = Math.max(4, opts.bitsPerKey ?? 10);
    // k = ln 2 · bits per key is optimal for a classic filter; blocked filters
    // lose a little, and one probe less costs nothing in FPR at this size.
    this.k = Math.max(1, Math.round(this.bitsPerKey * Math.LN2) - 1);
    this.layers.push(new BlockedLayer(Math.max(1024, opts.initialCapacity ?? 1 << 20), this.bitsPerKey, this.k));
  }

  /** Keys added (an upper bound of distinct keys: a key added twice counts twice). */
  get count(): number {
    let n = 0;
    for (const l of this.layers) n += l.count;
    return n;
  }

  /** Bytes of filter memory. */
  get bytes(): number {
    let n = 0;
    for (const l of this.layers) n += l.bits.byteLength;
    return n;
  }

  get layerCount(): number { return this.layers.length; }

  add(key: Uint8Array): void {
    keyHashes(key, this.h);
    let top = this.layers[this.layers.length - 1]!;
    if (top.count >= top.capacity) {
      top = new BlockedLayer(top.capacity * 2, this.bitsPerKey, this.k);
      this.layers.push(top);
    }
    top.add(this.h[0]!, this.h[1]!);
  }

  /** False: the key was never added. True: it may have been. */
  mayContain(key: Uint8Array): boolean {
    keyHashes(key, this.h);
    const h1 = this.h[0]!, h2 = this.h[1]!;
    for (let i = this.layers.length - 1; i >= 0; i--) if (this.layers[i]!.has(h1, h2)) return true;
    return false;
  }
}

/**
 * Exact set of 16-byte keys, bounded: two generations of `half` keys each;
 * when the young one is full the old one is dropped (a cheap LRU-ish cache
 * without per-entry objects). Answers are exact for what it holds.
 */
export class KeySet {
  private young: Table;
  private old: Table;
  constructor(private readonly half: number) {
    this.young = new Table(half);
    this.old = new Table(half);
  }

  get size(): number { return this.young.count + this.old.count; }

  clear(): void {
    this.young.clear();
    this.old.clear();
  }

  has(key: Uint8Array): boolean {
    if (key.length !== 16) return false;
    return this.young.has(key) || this.old.has(key);
  }

  add(key: Uint8Array): void {
    if (key.length !== 16) return;
    if (this.young.has(key)) return;
    if (this.young.count >= this.half) {
      const t = this.old;
      this.old = this.young;
      t.clear();
      this.young = t;
    }
    this.young.add(key);
  }
}

class Table {
  private readonly words: Uint32Array;
  private readonly used: Uint8Array;
  private readonly mask: number;
  count = 0;
  constructor(maxKeys: number) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(16, maxKeys * 2))); // load ≤ 1/2
    this.words = new Uint32Array(slots * 4);
    this.used = new Uint8Array(slots);
    this.mask = slots - 1;
  }

  clear(): void {
    this.used.fill(0);
    this.count = 0;
  }

  has(key: Uint8Array): boolean {
    const a = word(key, 0), b = word(key, 4), c = word(key, 8), d = word(key, 12);
    const w = this.words, used = this.used;
    let s = fmix(d ^ b) & this.mask;
    while (used[s] === 1) {
      const o = s * 4;
      if (w[o] === a && w[o + 1] === b && w[o + 2] === c && w[o + 3] === d) return true;
      s = (s + 1) & this.mask;
    }
    return false;
  }

  /** Adds a key known to be absent. */
  add(key: Uint8Array): void {
    const a = word(key, 0), b = word(key, 4), c = word(key, 8), d = word(key, 12);
    const used = this.used;
    let s = fmix(d ^ b) & this.mask;
    while (used[s] === 1) s = (s + 1) & this.mask;
    used[s] = 1;
    const o = s * 4;
    this.words[o] = a; this.words[o + 1] = b; this.words[o + 2] = c; this.words[o + 3] = d;
    this.count++;
  }
}
