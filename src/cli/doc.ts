// docs/cli.md is generated from the commander program itself (`npm run docs:cli`),
// and test/cli-doc.test.ts checks that the file matches, so the docs cannot drift.
import type { Command } from 'commander';

export function renderCliDoc(program: Command): string {
  const out: string[] = [
    '# Command line reference',
    '',
    '_Generated from the program by `npm run docs:cli`; a test fails when it is out of date._',
    '',
    'Exit codes: 0 success, 1 runtime failure, 2 usage error (for `join` also any startup error: bad option value, API refused, unusable data dir, port in use, unreadable swarm key; found before anything starts). Errors are one line on stderr. A second SIGTERM or SIGINT exits at once (130).',
    '',
  ];
  const walk = (cmd: Command, prefix: string) => {
    for (const sub of cmd.commands) {
      const name = `${prefix} ${sub.name()}`.trim();
      const args = sub.registeredArguments.map((a) => (a.required ? `<${a.name()}${a.variadic ? '…' : ''}>` : `[${a.name()}${a.variadic ? '…' : ''}]`)).join(' ');
      if (sub.commands.length === 0) {
        out.push(`## \`ubicrawl ${name}${args ? ' ' + args : ''}\``, '', sub.description(), '');
        const opts = sub.options.filter((o) => o.long !== '--help');
        if (opts.length) {
          out.push('| option | meaning | default |', '|---|---|---|');
          for (const o of opts) {
            const def = o.defaultValue === undefined || (Array.isArray(o.defaultValue) && o.defaultValue.length === 0) || o.defaultValue === false
              ? '' : `\`${JSON.stringify(o.defaultValue)}\``;
            const choices = o.argChoices ? ` (${o.argChoices.join(', ')})` : '';
            out.push(`| \`${o.flags.replace(/\|/g, '\\|')}\` | ${o.description}${choices} | ${def} |`);
          }
          out.push('');
        }
      }
      walk(sub, name);
    }
  };
  walk(program, '');
  return out.join('\n');
}
