// Validation of the optional <url> fields of Sitemaps 0.90
// (https://www.sitemaps.org/protocol.html, "XML tag definitions").
// A field that fails validation is dropped (and counted by the caller); the
// URL itself is kept, because the protocol makes these fields optional hints.

/** The <changefreq> values the protocol defines. */
export type Changefreq = 'always' | 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly' | 'never';

const CHANGEFREQ: ReadonlySet<string> = new Set(['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never']);

/**
 * <changefreq>: one of the seven protocol values. Matched after trimming and
 * ASCII lower-casing (the schema's enumeration is lower-case; an upper-case
 * "Daily" is unambiguous, so it is accepted rather than dropped).
 */
export function parseChangefreq(text: string): Changefreq | undefined {
  const v = text.trim().toLowerCase();
  return CHANGEFREQ.has(v) ? (v as Changefreq) : undefined;
}

const DECIMAL = /^[+-]?(?:\d{1,20}(?:\.\d{0,20})?|\.\d{1,20})$/;

/**
 * <priority>: "valid values range from 0.0 to 1.0". The schema types it as
 * xsd:decimal, so "1", ".5", "0.50" and "+0.5" are valid; exponents, "NaN",
 * hex and anything outside [0, 1] are not.
 */
export function parsePriority(text: string): number | undefined {
  const v = text.trim();
  if (!DECIMAL.test(v)) return undefined;
  const n = Number(v);
  if (!(n >= 0 && n <= 1)) return undefined;
  return n === 0 ? 0 : n; // no -0
}

// W3C Datetime (https://www.w3.org/TR/NOTE-datetime), the format <lastmod>
// must use: YYYY | YYYY-MM | YYYY-MM-DD | YYYY-MM-DDThh:mmTZD |
// YYYY-MM-DDThh:mm:ssTZD | YYYY-MM-DDThh:mm:ss.sTZD, TZD = Z | +hh:mm | -hh:mm.
// A time always carries a zone designator. Each group is bounded, so the
// regex cannot backtrack.
const W3C_DATETIME = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):(\d{2})))?)?)?$/;

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

// Sitemaps repeat the same <lastmod> over and over; one entry of memory pays.
let lastIn = '';
let lastOut: string | undefined;

/**
 * Parses a W3C Datetime and returns it as an ISO 8601 UTC string
 * (`Date.prototype.toISOString`, millisecond precision). A date without a time
 * is read as midnight UTC; a year alone as 1 January. Returns undefined for
 * anything else, including impossible dates (2023-02-29, 24:00, +25:00).
 */
export function parseW3cDatetime(text: string): string | undefined {
  const v = text.trim();
  if (v === lastIn) return lastOut;
  const out = w3c(v);
  lastIn = v;
  lastOut = out;
  return out;
}

function w3c(v: string): string | undefined {
  if (v.length > 40) return undefined;
  const m = W3C_DATETIME.exec(v);
  if (m === null) return undefined;
  const y = Number(m[1]);
  const mo = m[2] === undefined ? 1 : Number(m[2]);
  const d = m[3] === undefined ? 1 : Number(m[3]);
  const hh = m[4] === undefined ? 0 : Number(m[4]);
  const mi = m[5] === undefined ? 0 : Number(m[5]);
  const ss = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Number((m[7] + '00').slice(0, 3));
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || hh > 23 || mi > 59 || ss > 59) return undefined;
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (oh * 60 + om) * (m[9] === '-' ? -1 : 1);
  }
  const t = daysFromCivil(y, mo, d) * 86_400_000 + ((hh * 60 + mi - offsetMin) * 60 + ss) * 1000 + ms;
  return new Date(t).toISOString();
}

// RFC 822 / RFC 2822 §3.3 date-time, as RSS 2.0 <pubDate> uses it:
// [day ","] DD Mon YYYY hh:mm[:ss] zone. Checked by shape first, because
// Date.parse alone accepts almost anything.
const RFC822 = /^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{2,4}\s+\d{1,2}:\d{2}(?::\d{2})?\s*(?:[A-Za-z]{1,5}|[+-]\d{4})$/;

/** RSS <pubDate> → ISO 8601 UTC string, or undefined. */
export function parseRfc822Date(text: string): string | undefined {
  const v = text.trim();
  if (v.length > 64 || !RFC822.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}
