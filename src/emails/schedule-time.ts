// scheduled_at as the API takes it: an ISO 8601 date-time with a UTC offset
// ("2026-11-21T09:30:00Z", "2026-11-21T10:30:00+01:00"), or a relative form
// in English ("in 1 hour", "in 30 minutes", "in an hour", "in 2 days").
// A local time without an offset is refused: the server's zone is not the
// caller's, and guessing would send at the wrong hour.

const UNIT_MS: Record<string, number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
};

const UNIT_ALIASES: Record<string, keyof typeof UNIT_MS> = {
  s: 'second', sec: 'second', secs: 'second', second: 'second', seconds: 'second',
  m: 'minute', min: 'minute', mins: 'minute', minute: 'minute', minutes: 'minute',
  h: 'hour', hr: 'hour', hrs: 'hour', hour: 'hour', hours: 'hour',
  d: 'day', day: 'day', days: 'day',
  w: 'week', week: 'week', weeks: 'week',
};

// RFC 3339 §5.6 date-time; seconds optional as ISO 8601 allows.
const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})$/;
const RELATIVE = /^in\s+(an?|\d{1,6})\s*([a-z]+)$/;

/** Epoch ms for `input` relative to `now`, or undefined when it is neither form. */
export function parseScheduleTime(input: string, now: number): number | undefined {
  const text = input.trim();
  const iso = ISO.exec(text);
  if (iso) {
    const [, y, mo, d, h, mi, s = '0'] = iso;
    // Date.parse accepts days like 2026-02-31 by rolling over; check the fields came back unchanged.
    const ms = Date.parse(text.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
    if (Number.isNaN(ms)) return undefined;
    const local = new Date(Date.UTC(+y, +mo - 1, +d, +h, +mi, +s));
    if (local.getUTCFullYear() !== +y || local.getUTCMonth() !== +mo - 1 || local.getUTCDate() !== +d
      || local.getUTCHours() !== +h || local.getUTCMinutes() !== +mi || +s > 59) return undefined;
    return ms;
  }
  const rel = RELATIVE.exec(text.toLowerCase().replace(/\s+/g, ' '));
  if (rel) {
    const amount = rel[1] === 'a' || rel[1] === 'an' ? 1 : Number(rel[1]);
    const unit = UNIT_ALIASES[rel[2]];
    if (!unit) return undefined;
    return now + amount * UNIT_MS[unit];
  }
  return undefined;
}
