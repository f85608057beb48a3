// The crawl policy in force on this agent, compiled for the admission path and
// the host turn: the crawl scope with the mesh's seed units (src/scope/crawl-scope.ts),
// the block list (src/policy/blocklist.ts), and the caps and types the options
// set, all from one policy document (src/policy/document.ts). Rebuilt when the
// document changes (rarely: a block, a seed of a new unit). Pure.
import { CrawlScope, scopeUnit, type CrawlScopeConfig } from '../scope/crawl-scope.js';
import { BlockList } from './blocklist.js';
import { activeBlocks, blockTargetOf, type BlockTarget, type PolicyDocument } from './document.js';

export class PolicyInForce {
  readonly crawlScope: CrawlScope;
  readonly blocks: BlockList;

  /** `localUnits`: seed units this agent knows beyond the document's (e.g. past its bound). */
  constructor(readonly doc: PolicyDocument, localUnits: Iterable<string> = []) {
    this.crawlScope = new CrawlScope(doc.scope);
    for (const unit of doc.seedUnits) this.crawlScope.addSeed(unit);
    for (const unit of localUnits) this.crawlScope.addSeed(unit);
    this.blocks = new BlockList(doc.blocks);
  }

  /** The scope rules as the options write them (src/config.ts `crawlScope`). */
  get scope(): CrawlScopeConfig {
    return this.doc.scope;
  }

  /** The unit a seed on `host` adds to the document (none under `--scope web`). */
  seedUnitOf(host: string): string | null {
    return scopeUnit(this.doc.scope.mode, host);
  }

  /** Whether a normalised URL on `host` is blocked. */
  blocked(url: string, host: string): boolean {
    return this.blocks.size > 0 && this.blocks.blocked(url, host);
  }
}

/** The rules in force that `next` adds to `previous` and that cover whole hosts (host and domain rules): their queues go. */
export function newHostBlocks(previous: PolicyDocument, next: PolicyDocument): BlockTarget[] {
  const before = new Set(activeBlocks(previous).map((b) => `${b.kind} ${b.value}`));
  return activeBlocks(next).filter((b) => b.kind !== 'url' && !before.has(`${b.kind} ${b.value}`)).map((b) => ({ kind: b.kind, value: b.value }));
}

/**
 * A block list file (`--blocklist FILE`): one rule a line as `ubicrawl block`
 * takes it (src/policy/document.ts `blockTargetOf`), `#` to the end of a line a
 * comment, blank lines skipped. A bad line throws one error naming the file and line.
 */
export function parseBlocklist(text: string, file: string): BlockTarget[] {
  const out: BlockTarget[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    try { out.push(blockTargetOf(line)); } catch (err) {
      throw new Error(`${file}:${i + 1}: ${(err as Error).message.replace(/^block: /, '')}`);
    }
  }
  return out;
}
