// Encoder thread's handler: builds and gzips records off the main thread (see docs/warc.md,
// "Performance"). It runs on the helper thread (src/util/helper-thread.ts), which may be shared
// with other components: jobs arrive in batches and results leave in batches, once per
// event-loop turn, with their buffers transferred rather than copied.
import { encodeJob } from './records.js';
import type { EncodeJob } from './records.js';
import type { HelperReplies } from '../util/helper-worker.js';

export interface EncoderResult {
  id: number;
  ok?: Awaited<ReturnType<typeof encodeJob>>;
  err?: string;
}

export async function handle(jobs: unknown[]): Promise<HelperReplies> {
  const replies: EncoderResult[] = [];
  const transfer: ArrayBuffer[] = [];
  for (const { id, job } of jobs as Array<{ id: number; job: EncodeJob }>) {
    try {
      const ok = await encodeJob(job);
      replies.push({ id, ok });
      transfer.push(ok.bytes.buffer as ArrayBuffer);
    } catch (e) {
      replies.push({ id, err: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    }
  }
  return { replies, transfer };
}
