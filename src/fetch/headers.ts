// Operator-chosen request header fields (`--header "Name: value"`, docs/requests.md).
// A field is checked once, when it is given: its name must be a token and its value
// field-content (RFC 9110 §5.1, §5.5), and fields that the fetcher itself must own are
// refused — framing and hop-by-hop fields (RFC 9110 §7.6.1, RFC 9112 §6), and those
// that would change what is archived or how the body is decoded.

/** One header field as sent: the name as given (case kept), the value trimmed. */
export type HeaderField = [name: string, value: string];

/** RFC 9110 §5.6.2 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 §5.5 field-value: VCHAR, SP, HTAB and obs-text; no CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Lower-case name → why it may not be given. */
const REFUSED: Readonly<Record<string, string>> = Object.freeze({
  host: 'the fetcher writes Host from the URL',
  'content-length': 'a GET has no body (RFC 9110 §8.6)',
  'transfer-encoding': 'a GET has no body (RFC 9112 §6.1)',
  connection: 'a hop-by-hop field (RFC 9110 §7.6.1)',
  'keep-alive': 'a hop-by-hop field (RFC 9110 §7.6.1)',
  'proxy-connection': 'a hop-by-hop field (RFC 9110 §7.6.1)',
  te: 'a hop-by-hop field (RFC 9110 §7.6.1)',
  trailer: 'a GET has no body (RFC 9110 §6.6.2)',
  upgrade: 'a hop-by-hop field (RFC 9110 §7.8)',
  'proxy-authorization': 'proxy credentials go in the --proxy URL (http://user:password@host:port)',
  'user-agent': 'use --user-agent (robots.txt groups are matched on its product token)',
  'accept-encoding': 'the fetcher asks for the codings it decodes',
  range: 'a partial response would be archived as the page',
  'if-match': 'conditional requests are the recrawl\'s (docs/recrawl.md)',
  'if-none-match': 'conditional requests are the recrawl\'s (docs/recrawl.md)',
  'if-modified-since': 'conditional requests are the recrawl\'s (docs/recrawl.md)',
  'if-unmodified-since': 'conditional requests are the recrawl\'s (docs/recrawl.md)',
  'if-range': 'a partial response would be archived as the page',
});

export class HeaderError extends Error {
  override readonly name = 'HeaderError';
}

/** Parses `Name: value` (one `--header`); throws a HeaderError that says what is wrong in one line. */
export function parseHeaderField(spec: string): HeaderField {
  const colon = spec.indexOf(':');
  if (colon < 0) throw new HeaderError(`--header expects 'Name: value', got '${spec}'`);
  const name = spec.slice(0, colon);
  // A token, with no whitespace before the colon (RFC 9112 §5.1).
  if (!TOKEN.test(name)) throw new HeaderError(`--header: '${name}' is not a valid field name (letters, digits and !#$%&'*+-.^_\`|~, no spaces)`);
  const value = spec.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
  if (!FIELD_VALUE.test(value)) throw new HeaderError(`--header ${name}: the value holds a character a field value cannot (CR, LF, NUL and other controls, or beyond Latin-1)`);
  const refused = REFUSED[name.toLowerCase()];
  if (refused) throw new HeaderError(`--header ${name} is not allowed: ${refused}`);
  return [name, value];
}

/** Parses every `--header`; a name given twice is refused (RFC 9110 §5.3: combine the values with a comma in one field). */
export function parseHeaderFields(specs: readonly string[]): HeaderField[] {
  const out: HeaderField[] = [];
  const seen = new Set<string>();
  for (const spec of specs) {
    const field = parseHeaderField(spec);
    const key = field[0].toLowerCase();
    if (seen.has(key)) throw new HeaderError(`--header ${field[0]} is given twice: give one field, its values separated by commas (RFC 9110 §5.3)`);
    seen.add(key);
    out.push(field);
  }
  return out;
}

/**
 * The request's fields: the fetcher's defaults, each replaced by an operator's field of the
 * same name (case-insensitively), then the operator's other fields, then the request's own.
 */
export function mergeHeaderFields(defaults: readonly HeaderField[], operator: readonly HeaderField[], own: readonly HeaderField[] = []): HeaderField[] {
  const byName = new Map(operator.map((f) => [f[0].toLowerCase(), f] as const));
  const out: HeaderField[] = [];
  for (const d of defaults) {
    const o = byName.get(d[0].toLowerCase());
    out.push(o ?? d);
    if (o) byName.delete(d[0].toLowerCase());
  }
  for (const o of operator) if (byName.has(o[0].toLowerCase())) out.push(o);
  out.push(...own);
  return out;
}
