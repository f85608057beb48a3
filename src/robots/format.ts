// Text for `ubicrawl robots check`: one line per URL saying what decided.
import type { RobotsExplanation } from './parse.js';

/**
 * One line per URL, e.g.
 *   `allowed     /path  (allow: /pa* line 4, group ubicrawl)`
 *   `disallowed  /x  (disallow: / line 2, group *)`
 *   `allowed     /y  (no matching rule, group ubicrawl)`
 *   `allowed     /z  (no matching group)`
 *   `allowed     /robots.txt  (/robots.txt is always allowed)`
 */
export function formatExplain(url: string, result: RobotsExplanation): string {
  const verdict = (result.allowed ? 'allowed' : 'disallowed').padEnd(11);
  let why: string;
  if (result.rule) {
    why = `${result.rule.kind}: ${result.rule.pattern} line ${result.rule.line}, group ${result.group}`;
  } else if (result.group === '(robots.txt)') {
    why = '/robots.txt is always allowed';
  } else if (result.group === '(none)') {
    why = 'no matching group';
  } else {
    why = `no matching rule, group ${result.group}`;
  }
  return `${verdict} ${url}  (${why})`;
}
