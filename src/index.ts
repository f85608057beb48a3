// Public library API of ubicrawl. Keep this file a list of re-exports.
import './polyfill.js';
export { xxh64, xxh64Hex } from './hash/xxhash.js';
