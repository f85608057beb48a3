// docs/cli.md is generated from the commander program itself (`npm run docs:cli`),
// and test/cli-doc.test.ts checks that the file matches, so the docs cannot drift.
// Defaults and settings come from the options tables (./options.ts), which read src/config.ts.
import type { Command, Option } from 'commander';
import { cliOptionOf, defaultOf, JOIN_OPTIONS } from './options.js';

/** The default as docs/cli.md shows it: blank when there is none, the list is empty or the flag is off. */
function shownDefault(o: Option): string {
  const row = cliOptionOf(o);
  // A `--no-x` flag turns off a setting that is on by default: its "default" is not giving it.
  if (o.negate) return '';
  const value = row ? defaultOf(row) : o.defaultValue;
  if (value === undefined || value === false || (Array.isArray(value) && value.length === 0)) return '';
  return `\`${row?.show ? row.show(value) : JSON.stringify(value)}\``;
}

export function renderCliDoc(program: Command): string {
  const out: string[] = [
    '# Command line reference',
    '',
    '_Generated from the program by `npm run docs:cli`; a test fails when it is out of date._',
    '',
    'Defaults come from src/config.ts. The *setting* column names the field of the agent configuration an option sets (the same name in `startAgent()` options for library use: docs/architecture.md).',
    '',
    'A config file (`join --config crawl.yaml`, or `.json`) takes the same keys as `join`\'s long options, without the dashes (`max-depth: 2`; a `--no-x` flag is `x: false`); an option on the command line wins over the file, and `ubicrawl config print` shows the effective values and where each came from (docs/requests.md).',
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
        let opts = sub.options.filter((o) => o.long !== '--help');
        // A command that takes every option of join (config print) says so instead of repeating the table.
        const joinRows = new Set<unknown>(JOIN_OPTIONS);
        if (name !== 'join' && opts.filter((o) => joinRows.has(cliOptionOf(o))).length === JOIN_OPTIONS.length) {
          out.push('Takes every option of `ubicrawl join` (and its `--config` file), and:', '');
          opts = opts.filter((o) => !joinRows.has(cliOptionOf(o)));
        }
        // The agent setting each option sets (src/config.ts), for commands that have such options.
        const settings = opts.some((o) => cliOptionOf(o)?.config !== undefined);
        if (opts.length) {
          out.push(settings ? '| option | meaning | default | setting |' : '| option | meaning | default |', settings ? '|---|---|---|---|' : '|---|---|---|');
          for (const o of opts) {
            const choices = o.argChoices ? ` (${o.argChoices.join(', ')})` : '';
            const setting = cliOptionOf(o)?.config;
            const row = `| \`${o.flags.replace(/\|/g, '\\|')}\` | ${o.description}${choices} | ${shownDefault(o)} |`;
            out.push(settings ? `${row} ${setting ? `\`${setting}\`` : ''} |` : row);
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
