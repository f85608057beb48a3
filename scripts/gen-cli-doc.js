// Writes docs/cli.md from the commander program (run after `npm run build`).
import { writeFileSync } from 'node:fs';
import { buildProgram } from '../dist/src/cli/main.js';
import { renderCliDoc } from '../dist/src/cli/doc.js';
writeFileSync(new URL('../docs/cli.md', import.meta.url), renderCliDoc(buildProgram()) + '\n');
