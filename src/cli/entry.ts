// The CLI's module for bin/ubicrawl.js (bundled by scripts/bundle.js). The polyfill comes first: ES module
// order runs it before any dependency's module body (src/polyfill.ts).
import '../polyfill.js';
export { main } from './main.js';
// For bin/code-cache.js: compiled code is kept under the flags a start has (src/util/memory.ts changes one).
export { withStartFlags } from '../util/memory.js';
