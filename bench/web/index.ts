// The synthetic web: a deterministic, many-host web on loopback for tests,
// benchmarks and the demo. See docs/synthetic-web.md.
export { startSyntheticWeb, type SyntheticWeb } from './server.js';
export { checkPoliteness, checkPolitenessPerIp, type PolitenessOptions } from './politeness.js';
export { computeReachable } from './reachable.js';
export { WebGraph, canonicalTarget, isTrackingParam } from './graph.js';
export { RobotsOracle } from './robots-oracle.js';
export { buildGzipBomb } from './traps.js';
export type {
  SyntheticWebOptions, RequestRecord, Reachability, ReachableOptions, UrlInfo, Violation, RobotsSpec, RobotsOption,
  ErrorMix, TrapOptions, TrapUrls, VariantKind, InterceptRequest, InterceptResponse,
} from './types.js';
