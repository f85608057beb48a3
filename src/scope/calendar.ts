// Far-future calendar links: an events calendar's "next month" link goes on
// forever, and a crawler that follows it fetches empty pages for the year
// 3000. A URL is a calendar trap when it names a date whose year is later than
// `maxYear` (current year + N), in one of these shapes:
//   1. year SEP two-digit month (01–12):        /2099/05, 2099-05-17, 2099_05
//   2. year SEP month SEP day (1–2 digits each):  /2099/5/17, 2099.5.1
//      (SEP one of / - . _, the same both times)
//   3. a query parameter named for a date (year, month, date, day, cal, …)
//      whose value starts with YYYY, YYYYMM or YYYYMMDD:  ?year=2099, ?date=20990517
//   4. a whole path segment YYYY, YYYYMM or YYYYMMDD right after a segment
//      named like a calendar (calendar, events, archive, year, …): /events/2099
// A bare 4-digit number elsewhere (/product/2500) is not taken for a year.
// The scan is linear, with no regular expression.

/** Query parameter names whose value is a date (lower-case). Offsets and
 * coordinates (start, from, y, m, d) are deliberately absent: `?start=3000`
 * is a pager offset, not the year 3000 (dates with separators in any
 * parameter are caught by shapes 1 and 2 anyway). */
export const CALENDAR_PARAMS: ReadonlySet<string> = new Set([
  'year', 'yr', 'month', 'mon', 'day', 'date', 'dt', 'cal', 'calendar',
  'ym', 'ymd', 'yyyy', 'yyyymm', 'yyyymmdd', 'jahr', 'annee',
]);

/** Path segments after which a year-like segment is a date (lower-case). */
export const CALENDAR_SEGMENTS: ReadonlySet<string> = new Set([
  'calendar', 'calendars', 'cal', 'events', 'event', 'archive', 'archives', 'year', 'years',
  'date', 'dates', 'agenda', 'schedule', 'day', 'month', 'diary', 'kalender', 'calendrier',
]);

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isSep(c: number): boolean {
  return c === 0x2f || c === 0x2d || c === 0x2e || c === 0x5f; // / - . _
}

/** Value of the digits url[s, e). */
function num(url: string, s: number, e: number): number {
  let v = 0;
  for (let i = s; i < e; i++) v = v * 10 + (url.charCodeAt(i) - 48);
  return v;
}

/** Is url[s, e) (a digit run of length 4, 6 or 8) a YYYY / YYYYMM / YYYYMMDD date later than maxYear? */
function compactDateAfter(url: string, s: number, e: number, maxYear: number): boolean {
  const len = e - s;
  if (len !== 4 && len !== 6 && len !== 8) return false;
  if (num(url, s, s + 4) <= maxYear) return false;
  if (len >= 6) {
    const m = num(url, s + 4, s + 6);
    if (m < 1 || m > 12) return false;
  }
  if (len === 8) {
    const d = num(url, s + 6, s + 8);
    if (d < 1 || d > 31) return false;
  }
  return true;
}

/** Is url[from, to) (case-insensitively) in `set`? Allocates only for short names. */
function nameIn(url: string, from: number, to: number, set: ReadonlySet<string>): boolean {
  if (to - from < 1 || to - from > 12) return false;
  return set.has(url.slice(from, to).toLowerCase());
}

/**
 * Does the path or query of `url` (from index `from`, which should be where
 * the path starts) name a date in a year later than `maxYear`?
 */
export function hasFarFutureDate(url: string, from: number, maxYear: number): boolean {
  let end = url.indexOf('#', from);
  if (end < 0) end = url.length;
  const query = url.indexOf('?', from);
  const pathEnd = query >= 0 && query < end ? query : end;
  let i = from;
  while (i < end) {
    if (!isDigit(url.charCodeAt(i))) { i++; continue; }
    const s = i;
    while (i < end && isDigit(url.charCodeAt(i))) i++;
    const e = i;
    // Digit runs glued to letters (v2099, 2099abc) are not dates.
    if (s > 0 && isAlpha(url.charCodeAt(s - 1))) continue;
    if (e < end && isAlpha(url.charCodeAt(e))) continue;
    const len = e - s;
    if (len === 4 && num(url, s, e) > maxYear) {
      // Shapes 1 and 2.
      if (e + 1 < end && isSep(url.charCodeAt(e))) {
        const sep = url.charCodeAt(e);
        let j = e + 1;
        const ms = j;
        while (j < end && isDigit(url.charCodeAt(j))) j++;
        const ml = j - ms;
        if (ml === 1 || ml === 2) {
          const m = num(url, ms, j);
          if (m >= 1 && m <= 12) {
            if (ml === 2 && !(j < end && isDigit(url.charCodeAt(j)))) return true;
            if (j + 1 < end && url.charCodeAt(j) === sep) {
              const ds = j + 1;
              let k = ds;
              while (k < end && isDigit(url.charCodeAt(k))) k++;
              const dl = k - ds;
              if (dl === 1 || dl === 2) {
                const d = num(url, ds, k);
                if (d >= 1 && d <= 31) return true;
              }
            }
          }
        }
      }
    }
    if (len !== 4 && len !== 6 && len !== 8) continue;
    const before = s > from ? url.charCodeAt(s - 1) : 0;
    if (before === 0x3d /* = */ && s > pathEnd) {
      // Shape 3: name=VALUE in the query; the value must start here.
      let n = s - 2;
      while (n > pathEnd) {
        const c = url.charCodeAt(n);
        if (c === 0x26 || c === 0x3f || c === 0x3b) break; // & ? ;
        n--;
      }
      if (nameIn(url, n + 1, s - 1, CALENDAR_PARAMS) && compactDateAfter(url, s, e, maxYear)) return true;
    } else if (before === 0x2f && s < pathEnd) {
      // Shape 4: /segment/YYYY[MM[DD]] where YYYY… is the whole segment.
      const after = e < end ? url.charCodeAt(e) : 0x2f;
      if (after === 0x2f || e === pathEnd) {
        const segEnd = s - 1;
        const segStart = url.lastIndexOf('/', segEnd - 1) + 1;
        if (segStart > from && nameIn(url, segStart, segEnd, CALENDAR_SEGMENTS) && compactDateAfter(url, s, e, maxYear)) {
          return true;
        }
      }
    }
  }
  return false;
}

function isAlpha(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}
