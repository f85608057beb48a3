// The crawl policy's gossip topic: a PolicyChannel (src/policy/sync.ts) over the
// mesh's gossipsub. Only signed messages within the size bound pass the topic
// validator, so others are neither delivered nor forwarded (StrictSign
// authenticates the sender: any admitted member may publish a policy, which is
// what `ubicrawl block` on any agent needs; the document decoder then checks
// the content, and the merge in src/policy/document.ts keeps every copy safe to
// take in).
import { TopicValidatorResult, type Message, type PeerId } from '@libp2p/interface';
import type { MeshNode } from './node.js';
import { POLICY_LIMITS } from '../policy/document.js';
import type { PolicyChannel } from '../policy/sync.js';
import { policyTopic } from './wire.js';

export interface PolicyTopicStats { received: number; rejected: Record<string, number> }

export class PolicyTopic implements PolicyChannel {
  readonly topic: string;
  readonly stats: PolicyTopicStats = { received: 0, rejected: {} };
  private handler: ((from: string, bytes: Uint8Array) => void) | null = null;
  private readonly onMessage = (evt: CustomEvent<Message>): void => {
    const msg = evt.detail;
    if (msg.topic !== this.topic || msg.type !== 'signed' || this.handler === null) return;
    this.stats.received++;
    this.handler(msg.from.toString(), msg.data);
  };

  constructor(private readonly node: MeshNode, crawlId: string) {
    this.topic = policyTopic(crawlId);
  }

  private validate(_from: PeerId, msg: Message): TopicValidatorResult {
    const reason = msg.type !== 'signed' ? 'unsigned' : msg.data.length === 0 || msg.data.length > POLICY_LIMITS.maxBytes + 1 ? 'size' : null;
    if (reason === null) return TopicValidatorResult.Accept;
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
    return TopicValidatorResult.Reject;
  }

  subscribe(handler: (from: string, bytes: Uint8Array) => void): () => void {
    const pubsub = this.node.libp2p.services.pubsub;
    this.handler = handler;
    pubsub.topicValidators.set(this.topic, (from, msg) => this.validate(from, msg));
    pubsub.addEventListener('message', this.onMessage);
    pubsub.subscribe(this.topic);
    return () => {
      this.handler = null;
      pubsub.removeEventListener('message', this.onMessage);
      try { pubsub.unsubscribe(this.topic); } catch { /* stopping */ }
      pubsub.topicValidators.delete(this.topic);
    };
  }

  async publish(bytes: Uint8Array): Promise<void> {
    await this.node.libp2p.services.pubsub.publish(this.topic, bytes);
  }
}
