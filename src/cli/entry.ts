// The CLI's module for bin/ubicrawl.js (bundled by scripts/bundle.js). The polyfill comes first: ES module
// order runs it before any dependency's module body (src/polyfill.ts).
import '../polyfill.js';
export { main } from './main.js';
