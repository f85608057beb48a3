import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SerialLane } from '../src/util/serial-lane.js';

test('SerialLane: jobs run one at a time in request order; a job asked for while it waits runs once; a failure is reported and the lane goes on', async () => {
  const failures: string[] = [];
  const lane = new SerialLane((job, err) => failures.push(`${job}: ${err.message}`));
  const ran: string[] = [];
  let running = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  const job = (name: string, wait?: Promise<void>) => async () => {
    running++;
    assert.equal(running, 1, 'never two jobs at once');
    ran.push(name);
    if (wait) await wait;
    running--;
  };
  lane.request('a', job('a1', gate));
  await new Promise((r) => setImmediate(r));
  // a1 is running, not waiting: a second 'a' is queued behind it, a third coalesces with the second.
  assert.equal(lane.isWaiting('a'), false);
  lane.request('a', job('a2'));
  lane.request('b', async () => { ran.push('b'); throw new Error('boom'); });
  lane.request('a', job('a3'));
  lane.request('c', job('c'));
  assert.equal(lane.isWaiting('a'), true);
  release();
  await lane.settled;
  assert.deepEqual(ran, ['a1', 'a2', 'b', 'c']);
  assert.deepEqual(failures, ['b: boom']);
  assert.equal(lane.isWaiting('a'), false);
  lane.request('a', job('a4'));
  await lane.settled;
  assert.deepEqual(ran.slice(-1), ['a4']);
});
