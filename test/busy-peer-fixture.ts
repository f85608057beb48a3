// A mesh node in a process of its own whose event loop can be made to run late (test/mesh-connections.test.ts):
// prints its address, then on each stdin line `block MS` busy-waits that long and prints `done`.
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { createMeshNode } from '../src/mesh/node.js';

async function main(dataDir: string): Promise<void> {
  const node = await createMeshNode({ dataDir });
  process.stdout.write(`${node.addrs()[0]}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = /^block (\d+)$/.exec(line.trim());
    if (!m) return;
    const until = Date.now() + Number(m[1]);
    while (Date.now() < until) { /* a peer busy with something else */ }
    process.stdout.write('done\n');
  });
  process.stdin.on('end', () => { void node.stop().then(() => process.exit(0)); });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) void main(process.argv[2]!);
