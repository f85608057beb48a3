// robots.txt (RFC 9309): parsing, matching, explanation. See docs/standards.md (robots part).
export { RobotsTxt, productToken, DEFAULT_MAX_BYTES } from './parse.js';
export type { RobotsParseOptions, RobotsExplanation, RobotsRuleRef, RobotsTxtJSON } from './parse.js';
export { formatExplain } from './format.js';
