import { Cron } from 'croner';
import { nextOccurrences, occurrencesBetween, parseSchedule, type Schedule } from './schedule';
import { DomainValidationError, InvalidCronError, InvalidTimezoneError } from './errors';

const iso = (dates: Date[]) => dates.map((d) => d.toISOString().replace('.000Z', 'Z'));
const after = (s: Schedule, from: string, n: number) => iso(nextOccurrences(s, new Date(from), n));
const between = (s: Schedule, from: string, to: string, cap = 1000) => iso(occurrencesBetween(s, new Date(from), new Date(to), cap));
const formats = new Map<string, Intl.DateTimeFormat>();
const local = (d: Date, zone: string) => {
  let f = formats.get(zone);
  if (!f) formats.set(zone, (f = new Intl.DateTimeFormat('sv-SE', { timeZone: zone, dateStyle: 'short', timeStyle: 'short' })));
  return f.format(d);
};

function rejection(fn: () => unknown): DomainValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainValidationError) return e;
    throw e;
  }
  throw new Error('expected a DomainValidationError');
}

describe('parseSchedule', () => {
  it('keeps a normalised expression and the canonical zone', () => {
    const s = parseSchedule('  0  9 * *   MON-FRI ', 'europe/berlin');
    expect(s.cron).toBe('0 9 * * MON-FRI');
    expect(s.timezone).toBe('Europe/Berlin');
  });

  it.each(['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually'])('accepts the nickname %s', (cron) => {
    expect(parseSchedule(cron, 'UTC').cron).toBe(cron);
  });

  it.each([
    [undefined, 'type'],
    [5, 'type'],
    ['', 'empty'],
    ['   ', 'empty'],
    ['* * * *', 'fields'],
    ['0 0 9 * * *', 'fields'],
    ['0 0 9 * * * 2027', 'fields'],
    ['61 * * * *', 'syntax'],
    ['* 24 * * *', 'syntax'],
    ['* * 32 * *', 'syntax'],
    ['* * * 13 *', 'syntax'],
    ['a b c d e', 'syntax'],
    ['*/0 * * * *', 'syntax'],
    ['@reboot', 'syntax'],
    ['@often', 'syntax'],
    ['0 0 30 2 *', 'never'],
    ['0 0 31 4 *', 'never'],
    ['x'.repeat(201), 'too_long'],
  ])('rejects cron %j (%s)', (cron, rule) => {
    const error = rejection(() => parseSchedule(cron, 'UTC'));
    expect(error).toBeInstanceOf(InvalidCronError);
    expect(error).toMatchObject({ field: 'cron', rule });
    expect(error.message).toMatch(/^cron /);
  });

  // Such a refusal cost croner's search through 400 years of months (~2-9 ms of the API's CPU,
  // unbudgeted before the request limit counted invalid requests); now a lookup of the fields.
  it.each(['0 0 31 2 *', '0 0 30,31 2 *', '0 0 31 4,6,9,11 *', '0 0 31 2 ?', '0 0 30 FEB +MON', '15 10 30-31 2 *', '0 0 1-7 * +MON#5', '0 0 31W 2 *', '0 0 1 1 +1L'])(
    'refuses %j, which names no date that exists, without searching for one',
    (cron) => {
      const search = jest.spyOn(Cron.prototype, 'nextRun');
      try {
        const error = rejection(() => parseSchedule(cron, 'UTC'));
        expect(error).toMatchObject({ field: 'cron', rule: 'never' });
        expect(error.message).toMatch(/^cron never matches a date/);
        expect(search).not.toHaveBeenCalled();
      } finally {
        search.mockRestore();
      }
    },
  );

  it.each([
    ['0 0 31 2 MON', '2027-02-01T00:00:00Z'], // day of month OR day of week (Vixie): Mondays in February
    ['0 0 29 2 *', '2028-02-29T00:00:00Z'],
    ['0 0 30,31 1-3 *', '2027-01-30T00:00:00Z'],
    ['0 0 31 2,3 *', '2027-03-31T00:00:00Z'],
    ['0 0 L 2 *', '2027-02-28T00:00:00Z'],
    ['0 0 29 FEB +MON', '2044-02-29T00:00:00Z'], // AND: a Monday the 29th of February
    ['0 0 13 * +FRI', '2027-08-13T00:00:00Z'],
    ['0 0 * 2 +MON#5', '2044-02-29T00:00:00Z'], // a fifth Monday in February
    ['0 0 LW * *', '2027-01-29T00:00:00Z'],
    ['0 0 30W 1 *', '2027-01-29T00:00:00Z'],
    ['0 0 * JUL 5L', '2027-07-30T00:00:00Z'],
  ])('accepts %j, which names a date that exists (next after 2027: %s)', (cron, next) => {
    expect(after(parseSchedule(cron, 'UTC'), '2027-01-01T00:00:00Z', 1)).toEqual([next]);
  });

  it.each([
    [undefined, 'type'],
    ['', 'format'],
    ['+01:00', 'format'],
    ['UTC+1', 'unknown'],
    ['Europe/Berlin ', 'format'],
    ['../etc/passwd', 'format'],
    ['Nope/Zone', 'unknown'],
    ['Mars/Olympus_Mons', 'unknown'],
  ])('rejects timezone %j (%s)', (timezone, rule) => {
    const error = rejection(() => parseSchedule('0 9 * * *', timezone));
    expect(error).toBeInstanceOf(InvalidTimezoneError);
    expect(error).toMatchObject({ field: 'timezone', rule });
    expect(error.message).toMatch(/^timezone /);
  });

  it.each(['UTC', 'Etc/GMT+5', 'America/Argentina/Buenos_Aires', 'Asia/Kathmandu', 'Australia/Lord_Howe'])('accepts timezone %s', (zone) => {
    expect(() => parseSchedule('0 9 * * *', zone)).not.toThrow();
  });
});

describe('occurrences away from DST changes', () => {
  it('weekday mornings in Berlin, winter and summer offsets', () => {
    const s = parseSchedule('0 9 * * MON-FRI', 'Europe/Berlin');
    expect(after(s, '2026-11-27T00:00:00Z', 3)).toEqual(['2026-11-27T08:00:00Z', '2026-11-30T08:00:00Z', '2026-12-01T08:00:00Z']);
    expect(after(s, '2026-07-03T00:00:00Z', 2)).toEqual(['2026-07-03T07:00:00Z', '2026-07-06T07:00:00Z']);
  });

  it('is strictly after `after`, to the millisecond', () => {
    const s = parseSchedule('0 9 * * *', 'UTC');
    expect(after(s, '2026-11-30T09:00:00.000Z', 1)).toEqual(['2026-12-01T09:00:00Z']);
    expect(after(s, '2026-11-30T08:59:59.999Z', 1)).toEqual(['2026-11-30T09:00:00Z']);
    expect(after(s, '2026-11-30T09:00:00.001Z', 1)).toEqual(['2026-12-01T09:00:00Z']);
  });

  it('uses OR for day-of-month and day-of-week, like Vixie cron', () => {
    const s = parseSchedule('0 12 1 * MON', 'UTC');
    expect(after(s, '2026-11-28T00:00:00Z', 3)).toEqual(['2026-11-30T12:00:00Z', '2026-12-01T12:00:00Z', '2026-12-07T12:00:00Z']);
  });

  it('supports L, W and # through croner', () => {
    expect(after(parseSchedule('0 0 L * *', 'UTC'), '2028-02-01T00:00:00Z', 1)).toEqual(['2028-02-29T00:00:00Z']);
    expect(after(parseSchedule('0 9 * * MON#1', 'UTC'), '2026-11-01T00:00:00Z', 1)).toEqual(['2026-11-02T09:00:00Z']);
  });

  it('handles half-hour and quarter-hour zones', () => {
    expect(after(parseSchedule('0 9 * * *', 'Asia/Kolkata'), '2026-11-30T00:00:00Z', 1)).toEqual(['2026-11-30T03:30:00Z']);
    expect(after(parseSchedule('0 9 * * *', 'Asia/Kathmandu'), '2026-11-30T00:00:00Z', 1)).toEqual(['2026-11-30T03:15:00Z']);
  });

  it('returns fewer only when asked for none', () => {
    const s = parseSchedule('@yearly', 'UTC');
    expect(nextOccurrences(s, new Date('2026-01-01T00:00:00Z'), 0)).toEqual([]);
    expect(nextOccurrences(s, new Date('2026-01-01T00:00:00Z'), 5)).toHaveLength(5);
    expect(() => nextOccurrences(s, new Date(), -1)).toThrow(RangeError);
    expect(() => nextOccurrences(s, new Date(NaN), 1)).toThrow(RangeError);
  });
});

describe('occurrencesBetween', () => {
  const s = parseSchedule('0 * * * *', 'UTC');

  it('is (from, to]: exclusive start, inclusive end, ± 1 ms', () => {
    expect(between(s, '2026-11-30T09:00:00.000Z', '2026-11-30T11:00:00.000Z')).toEqual(['2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z']);
    expect(between(s, '2026-11-30T08:59:59.999Z', '2026-11-30T10:59:59.999Z')).toEqual(['2026-11-30T09:00:00Z', '2026-11-30T10:00:00Z']);
    expect(between(s, '2026-11-30T09:00:00.001Z', '2026-11-30T11:00:00.001Z')).toEqual(['2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z']);
  });

  it('stops at the cap; continuing from the last one yields the rest', () => {
    const first = occurrencesBetween(s, new Date('2026-11-30T00:00:00Z'), new Date('2026-12-01T00:00:00Z'), 10);
    expect(first).toHaveLength(10);
    const rest = occurrencesBetween(s, first[9], new Date('2026-12-01T00:00:00Z'), 1000);
    expect(first.length + rest.length).toBe(24);
    expect(iso(rest)[13]).toBe('2026-12-01T00:00:00Z');
  });

  it('is empty for an empty or reversed range and for cap 0', () => {
    expect(between(s, '2026-11-30T09:00:00Z', '2026-11-30T09:00:00Z')).toEqual([]);
    expect(between(s, '2026-11-30T10:00:00Z', '2026-11-30T09:00:00Z')).toEqual([]);
    expect(between(s, '2026-11-30T08:00:00Z', '2026-11-30T12:00:00Z', 0)).toEqual([]);
    expect(() => occurrencesBetween(s, new Date(), new Date(), -1)).toThrow(RangeError);
  });
});

describe('isOccurrence', () => {
  it('recognises occurrences and nothing else, DST rule included', () => {
    const s = parseSchedule('30 2 * * *', 'Europe/Berlin');
    expect(s.isOccurrence(new Date('2026-10-25T00:30:00Z'))).toBe(true); // 02:30 CEST, first pass
    expect(s.isOccurrence(new Date('2026-10-25T01:30:00Z'))).toBe(false); // 02:30 CET, repeated
    expect(s.isOccurrence(new Date('2026-03-29T01:00:00Z'))).toBe(false); // 03:00 CEST: croner's shifted time
    expect(s.isOccurrence(new Date('2026-03-28T01:30:00Z'))).toBe(true);
    expect(s.isOccurrence(new Date('2026-03-28T01:30:00.001Z'))).toBe(false);
    expect(s.isOccurrence(new Date(NaN))).toBe(false);
  });
});

/**
 * The DST rule (schedule.ts): each matching local time fires once, at its first instant; a
 * local time that does not exist is skipped. Transitions used (2026):
 * - Europe/Berlin: 29 Mar 02:00 CET → 03:00 CEST (01:00Z); 25 Oct 03:00 CEST → 02:00 CET (01:00Z)
 * - America/New_York: 8 Mar 02:00 EST → 03:00 EDT (07:00Z); 1 Nov 02:00 EDT → 01:00 EST (06:00Z)
 * - Australia/Sydney (southern hemisphere): 5 Apr 03:00 AEDT → 02:00 AEST (16:00Z, 4 Apr);
 *   4 Oct 02:00 AEST → 03:00 AEDT (16:00Z, 3 Oct)
 * - Australia/Lord_Howe (30-minute shift): 5 Apr 02:00 → 01:30 (15:00Z, 4 Apr);
 *   4 Oct 02:00 → 02:30 (15:30Z, 3 Oct)
 */
describe('DST: a local time that does not exist is skipped', () => {
  it.each([
    ['Europe/Berlin', '30 2 * * *', '2026-03-27T12:00:00Z', ['2026-03-28T01:30:00Z', '2026-03-30T00:30:00Z']],
    ['Europe/Berlin', '0 2 * * *', '2026-03-27T12:00:00Z', ['2026-03-28T01:00:00Z', '2026-03-30T00:00:00Z']],
    ['America/New_York', '30 2 * * *', '2026-03-06T12:00:00Z', ['2026-03-07T07:30:00Z', '2026-03-09T06:30:00Z']],
    ['Australia/Sydney', '30 2 * * *', '2026-10-02T12:00:00Z', ['2026-10-02T16:30:00Z', '2026-10-04T15:30:00Z']],
    ['Australia/Lord_Howe', '15 2 * * *', '2026-10-02T12:00:00Z', ['2026-10-02T15:45:00Z', '2026-10-04T15:15:00Z']],
  ])('%s %s skips the spring-forward day', (zone, cron, from, expected) => {
    expect(after(parseSchedule(cron, zone), from, 2)).toEqual(expected);
  });

  it('a local time right after the gap still fires (it exists)', () => {
    expect(after(parseSchedule('0 3 * * *', 'Europe/Berlin'), '2026-03-28T12:00:00Z', 1)).toEqual(['2026-03-29T01:00:00Z']);
    expect(after(parseSchedule('30 2 * * *', 'Australia/Lord_Howe'), '2026-10-03T12:00:00Z', 1)).toEqual(['2026-10-03T15:30:00Z']);
  });

  it('an interval expression passes over the missing hour', () => {
    const s = parseSchedule('*/30 * * * *', 'Europe/Berlin');
    const times = nextOccurrences(s, new Date('2026-03-29T00:00:00Z'), 3);
    expect(iso(times)).toEqual(['2026-03-29T00:30:00Z', '2026-03-29T01:00:00Z', '2026-03-29T01:30:00Z']);
    expect(times.map((d) => local(d, 'Europe/Berlin'))).toEqual(['2026-03-29 01:30', '2026-03-29 03:00', '2026-03-29 03:30']);
  });
});

describe('DST: a repeated local time runs once, at its first instant', () => {
  it.each([
    ['Europe/Berlin', '30 2 * * *', '2026-10-24T12:00:00Z', ['2026-10-25T00:30:00Z', '2026-10-26T01:30:00Z']],
    ['America/New_York', '30 1 * * *', '2026-10-31T12:00:00Z', ['2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z']],
    ['Australia/Sydney', '30 2 * * *', '2026-04-04T12:00:00Z', ['2026-04-04T15:30:00Z', '2026-04-05T16:30:00Z']],
    ['Australia/Lord_Howe', '45 1 * * *', '2026-04-04T12:00:00Z', ['2026-04-04T14:45:00Z', '2026-04-05T15:15:00Z']],
  ])('%s %s fires once on the fall-back day', (zone, cron, from, expected) => {
    expect(after(parseSchedule(cron, zone), from, 2)).toEqual(expected);
  });

  it('interval expressions too: no second pass through the repeated hour', () => {
    expect(after(parseSchedule('15,45 1 * * *', 'America/New_York'), '2026-10-31T12:00:00Z', 3)).toEqual([
      '2026-11-01T05:15:00Z',
      '2026-11-01T05:45:00Z',
      '2026-11-02T06:15:00Z',
    ]);
    // hourly in Berlin: 02:00 CEST (00:00Z), [02:00 CET skipped], 03:00 CET (02:00Z)
    expect(after(parseSchedule('0 * * * *', 'Europe/Berlin'), '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00Z',
      '2026-10-25T02:00:00Z',
      '2026-10-25T03:00:00Z',
    ]);
  });

  it('starting inside the second pass does not revisit times that already fired', () => {
    // 06:20Z is 01:20 EST, the second 01:20 of the night
    expect(after(parseSchedule('*/15 * * * *', 'America/New_York'), '2026-11-01T06:20:00Z', 2)).toEqual([
      '2026-11-01T07:00:00Z',
      '2026-11-01T07:15:00Z',
    ]);
    expect(after(parseSchedule('30 1 * * *', 'America/New_York'), '2026-11-01T05:31:00Z', 1)).toEqual(['2026-11-02T06:30:00Z']);
  });
});

describe('DST: a whole year, every local time accounted for', () => {
  it.each([
    // The gap loses its local times (02:00, 02:30); the overlap's repeated ones still count once.
    ['Europe/Berlin', '*/30 * * * *', 365 * 48 - 2],
    ['America/New_York', '*/30 * * * *', 365 * 48 - 2],
    ['Australia/Sydney', '*/30 * * * *', 365 * 48 - 2],
    ['Australia/Lord_Howe', '*/30 * * * *', 365 * 48 - 1], // 30-minute shifts: only 02:00 is lost
    ['Asia/Tokyo', '*/30 * * * *', 365 * 48], // no DST
    ['Europe/Berlin', '30 2 * * *', 364],
    ['America/New_York', '30 1 * * *', 365],
  ])('%s %s: %i occurrences in 2026, increasing, one per local time', (zone, cron, count) => {
    const from = new Date(Date.parse('2026-01-01T00:00:00Z'));
    const s = parseSchedule(cron, zone);
    // local midnight to local midnight, via the schedule's own arithmetic on a daily expression
    const [start] = nextOccurrences(parseSchedule('0 0 1 1 *', zone), new Date(from.getTime() - 2 * 86_400_000), 1);
    const [end] = nextOccurrences(parseSchedule('0 0 1 1 *', zone), start, 1);
    const all = occurrencesBetween(s, new Date(start.getTime() - 1), new Date(end.getTime() - 1), 100_000);
    expect(all).toHaveLength(count);
    const locals = new Set(all.map((d) => local(d, zone)));
    expect(locals.size).toBe(all.length);
    expect(all.every((d, i) => i === 0 || d.getTime() > all[i - 1].getTime())).toBe(true);
  });
});

describe("croner's own DST behaviour (why the wrapper enforces the rule)", () => {
  // If a croner upgrade changes these, re-read schedule.ts: the wrapper does not depend on them,
  // but the documentation contrasts with them.
  it('moves a fixed time out of the gap to the first valid time', () => {
    const runs = new Cron('30 2 * * *', { timezone: 'Europe/Berlin', paused: true }).nextRuns(2, new Date('2026-03-28T12:00:00Z'));
    expect(runs.map((d) => d.toISOString())).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
  });

  it('runs a fixed time once but an interval expression twice in the repeated hour', () => {
    const fixed = new Cron('30 1 * * *', { timezone: 'America/New_York', paused: true }).nextRuns(2, new Date('2026-10-31T12:00:00Z'));
    expect(fixed.map((d) => d.toISOString())).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    const interval = new Cron('15,45 1 * * *', { timezone: 'America/New_York', paused: true }).nextRuns(4, new Date('2026-10-31T12:00:00Z'));
    expect(interval.map((d) => d.toISOString())).toEqual([
      '2026-11-01T05:15:00.000Z',
      '2026-11-01T05:45:00.000Z',
      '2026-11-01T06:15:00.000Z',
      '2026-11-01T06:45:00.000Z',
    ]);
  });
});

describe('cost', () => {
  it('memoised steps answer exactly like a fresh parse', () => {
    const shared = parseSchedule('*/20 1-3 * * *', 'Europe/Berlin');
    const starts = ['2026-10-24T22:00:00Z', '2026-10-25T00:10:00Z', '2026-10-25T01:10:00Z', '2026-10-24T22:00:00Z', '2026-03-28T23:59:59.999Z'];
    for (const start of starts) {
      const fresh = parseSchedule('*/20 1-3 * * *', 'Europe/Berlin');
      expect(after(shared, start, 12)).toEqual(after(fresh, start, 12));
    }
  });

  // The recurring sweep needs >= 20,000 occurrences/s end to end. Plain Node on this machine
  // enumerates ~35,000-100,000/s for hourly schedules (croner's step is most of it); Jest's
  // transform and a shared, loaded CPU make it several times slower here, so this only guards
  // against order-of-magnitude regressions such as re-parsing the expression per call.
  it('enumerates occurrences cheaply once parsed', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'UTC'];
    const schedules = zones.map((z) => parseSchedule('0 * * * *', z));
    const from = new Date('2026-01-01T00:00:00Z');
    for (const s of schedules) nextOccurrences(s, from, 24 * 40); // warm the zone tables and the JIT
    const started = performance.now();
    let n = 0;
    for (let i = 0; i < 250; i++) n += nextOccurrences(schedules[i % 4], new Date(from.getTime() + i * 3_600_000), 24).length;
    const perSecond = n / ((performance.now() - started) / 1000);
    expect(n).toBe(6_000);
    expect(perSecond).toBeGreaterThan(3_000);
  });
});
