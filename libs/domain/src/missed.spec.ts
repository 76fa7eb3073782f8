import {
  MAX_MISSED_ALL,
  cursorBefore,
  parseMissedPolicy,
  planMaterialisation,
  planMissed,
  resumedNextRunAt,
  type MaterialisationPlan,
} from './missed';
import { nextOccurrences, occurrencesBetween, parseSchedule } from './schedule';
import { InvalidMissedPolicyError } from './errors';

const d = (s: string) => new Date(s);
const iso = (dates: Date[]) => dates.map((x) => x.toISOString().replace('.000Z', 'Z'));
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('parseMissedPolicy', () => {
  it('defaults to skip and accepts the three names', () => {
    expect(parseMissedPolicy(undefined)).toBe('skip');
    for (const p of ['skip', 'latest', 'all']) expect(parseMissedPolicy(p)).toBe(p);
  });

  it.each([[null], [''], ['ALL'], ['none'], [1]])('rejects %p naming the field', (raw) => {
    expect(() => parseMissedPolicy(raw)).toThrow(InvalidMissedPolicyError);
    expect(() => parseMissedPolicy(raw)).toThrow(/^missed must be one of skip, latest, all/);
  });
});

describe('planMissed', () => {
  const missed = ['2026-11-30T03:00:00Z', '2026-11-30T01:00:00Z', '2026-11-30T02:00:00Z'].map(d);

  it('skip runs none and counts all as skipped', () => {
    expect(planMissed('skip', missed)).toEqual({ toRun: [], skipped: 3 });
  });

  it('latest runs only the most recent, whatever the input order', () => {
    expect(planMissed('latest', missed)).toEqual({ toRun: [d('2026-11-30T03:00:00Z')], skipped: 2 });
  });

  it('all runs every one, oldest first', () => {
    expect(iso(planMissed('all', missed).toRun)).toEqual(['2026-11-30T01:00:00Z', '2026-11-30T02:00:00Z', '2026-11-30T03:00:00Z']);
    expect(planMissed('all', missed).skipped).toBe(0);
  });

  it('all is capped at 1000 by default: the most recent run, the overflow counts as skipped', () => {
    expect(MAX_MISSED_ALL).toBe(1000);
    const many = Array.from({ length: 1500 }, (_, i) => new Date(Date.UTC(2026, 0, 1) + i * 60_000));
    const plan = planMissed('all', many);
    expect(plan.toRun).toHaveLength(1000);
    expect(plan.skipped).toBe(500);
    expect(plan.toRun[0]).toEqual(many[500]);
    expect(plan.toRun[999]).toEqual(many[1499]);
    expect(planMissed('all', many.slice(0, 1000))).toMatchObject({ skipped: 0 });
    expect(planMissed('all', many.slice(0, 1001))).toMatchObject({ skipped: 1 });
    expect(planMissed('all', many, 2)).toEqual({ toRun: [many[1498], many[1499]], skipped: 1498 });
  });

  it('nothing missed, nothing to do', () => {
    for (const p of ['skip', 'latest', 'all'] as const) expect(planMissed(p, [])).toEqual({ toRun: [], skipped: 0 });
  });

  it('never drops silently: run + skipped = missed', () => {
    for (const p of ['skip', 'latest', 'all'] as const) {
      for (const cap of [1, 2, 5]) {
        const plan = planMissed(p, missed, cap);
        expect(plan.toRun.length + plan.skipped).toBe(missed.length);
      }
    }
  });

  it('does not reorder the caller’s array', () => {
    const input = [...missed];
    planMissed('all', input);
    expect(input).toEqual(missed);
  });

  it.each([0, -1, 1.5, NaN])('rejects cap %p', (cap) => {
    expect(() => planMissed('all', missed, cap)).toThrow(RangeError);
  });
});

describe('planMaterialisation', () => {
  const hourly = parseSchedule('0 * * * *', 'UTC');
  const now = d('2026-11-30T09:30:00Z');

  it('a new schedule materialises everything from now through now + horizon, nothing missed', () => {
    const plan = planMaterialisation(hourly, null, now, 3 * HOUR, 'all');
    expect(iso(plan.toMaterialise)).toEqual(['2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z', '2026-11-30T12:00:00Z']);
    expect(plan).toMatchObject({ missed: 0, skipped: 0, nextCursor: d('2026-11-30T12:30:00Z'), nextRunAt: d('2026-11-30T13:00:00Z') });
  });

  it('the horizon end is inclusive and now itself counts as upcoming, not missed (± 1 ms)', () => {
    const at9 = d('2026-11-30T09:00:00Z');
    expect(iso(planMaterialisation(hourly, null, at9, HOUR, 'skip').toMaterialise)).toEqual(['2026-11-30T09:00:00Z', '2026-11-30T10:00:00Z']);
    expect(iso(planMaterialisation(hourly, null, at9, HOUR - 1, 'skip').toMaterialise)).toEqual(['2026-11-30T09:00:00Z']);
    const justAfter = new Date(at9.getTime() + 1);
    expect(iso(planMaterialisation(hourly, null, justAfter, HOUR, 'skip').toMaterialise)).toEqual(['2026-11-30T10:00:00Z']);
    // with a cursor, an occurrence exactly at now is due, not missed; 1 ms earlier it is missed
    const cursor = d('2026-11-30T08:30:00Z');
    expect(planMaterialisation(hourly, cursor, at9, 0, 'skip')).toMatchObject({ missed: 0, toMaterialise: [at9] });
    expect(planMaterialisation(hourly, cursor, justAfter, 0, 'skip')).toMatchObject({ missed: 1, skipped: 1, toMaterialise: [] });
  });

  it('steady state: each sweep picks up where the last cursor ended, with no repeats and no gaps', () => {
    let cursor: Date | null = null;
    const seen: string[] = [];
    for (let minute = 0; minute <= 6 * 60; minute += 7) {
      const plan: MaterialisationPlan = planMaterialisation(hourly, cursor, new Date(now.getTime() + minute * 60_000), DAY, 'skip');
      expect(plan.missed).toBe(0);
      seen.push(...iso(plan.toMaterialise));
      cursor = plan.nextCursor;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(iso(occurrencesBetween(hourly, new Date(now.getTime() - 1), cursor!, 1000)));
    expect(seen).toHaveLength(24 + 6);
  });

  describe('after downtime (cursor 3 days back, every hour missed since)', () => {
    const cursor = d('2026-11-27T09:30:00Z');
    const missedCount = 72; // 10:00 on the 27th .. 09:00 on the 30th

    it('skip: materialises none of the missed, counts them all', () => {
      const plan = planMaterialisation(hourly, cursor, now, 2 * HOUR, 'skip');
      expect(iso(plan.toMaterialise)).toEqual(['2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z']);
      expect(plan).toMatchObject({ missed: missedCount, skipped: missedCount, nextCursor: d('2026-11-30T11:30:00Z') });
    });

    it('latest: only the most recent missed one, then the upcoming', () => {
      const plan = planMaterialisation(hourly, cursor, now, 2 * HOUR, 'latest');
      expect(iso(plan.toMaterialise)).toEqual(['2026-11-30T09:00:00Z', '2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z']);
      expect(plan).toMatchObject({ missed: missedCount, skipped: missedCount - 1 });
    });

    it('all: every missed one, oldest first', () => {
      const plan = planMaterialisation(hourly, cursor, now, 2 * HOUR, 'all');
      expect(plan.toMaterialise).toHaveLength(missedCount + 2);
      expect(iso(plan.toMaterialise.slice(0, 2))).toEqual(['2026-11-27T10:00:00Z', '2026-11-27T11:00:00Z']);
      expect(plan).toMatchObject({ missed: missedCount, skipped: 0 });
    });

    it('all, capped: the most recent `cap`, the rest counted as skipped', () => {
      const plan = planMaterialisation(hourly, cursor, now, 2 * HOUR, 'all', 10);
      expect(plan.toMaterialise).toHaveLength(12);
      expect(iso(plan.toMaterialise)[0]).toBe('2026-11-30T00:00:00Z');
      expect(plan).toMatchObject({ missed: missedCount, skipped: missedCount - 10 });
    });

    it('agrees with planMissed over the same missed occurrences', () => {
      const missed = occurrencesBetween(hourly, cursor, new Date(now.getTime() - 1), 10_000);
      for (const policy of ['skip', 'latest', 'all'] as const) {
        for (const cap of [1, 5, 1000]) {
          const plan = planMaterialisation(hourly, cursor, now, 0, policy, cap);
          const expected = planMissed(policy, missed, cap);
          expect(plan.toMaterialise).toEqual(expected.toRun);
          expect(plan.skipped).toBe(expected.skipped);
          expect(plan.missed).toBe(missed.length);
        }
      }
    });

    it('the next sweep does not count them again', () => {
      const first = planMaterialisation(hourly, cursor, now, 2 * HOUR, 'skip');
      const second = planMaterialisation(hourly, first.nextCursor, new Date(now.getTime() + 60_000), 2 * HOUR, 'skip');
      expect(second).toMatchObject({ missed: 0, skipped: 0, toMaterialise: [] });
    });
  });

  it('a long outage keeps only the most recent `cap` of an every-minute schedule, counting the rest', () => {
    const everyMinute = parseSchedule('* * * * *', 'UTC');
    const plan = planMaterialisation(everyMinute, d('2026-11-25T09:30:00Z'), now, 0, 'all', 1000);
    expect(plan.missed).toBe(5 * 24 * 60 - 1);
    expect(plan.skipped).toBe(5 * 24 * 60 - 1 - 1000);
    expect(plan.toMaterialise).toHaveLength(1001); // 1000 missed + the one due exactly at now
    expect(iso(plan.toMaterialise.slice(-2))).toEqual(['2026-11-30T09:29:00Z', '2026-11-30T09:30:00Z']);
    expect(iso(plan.toMaterialise)[0]).toBe('2026-11-29T16:50:00Z'); // 09:29 minus 999 minutes
  });

  it('a cursor already beyond the window does nothing and never moves back', () => {
    const cursor = d('2026-12-05T00:00:00Z');
    const plan = planMaterialisation(hourly, cursor, now, HOUR, 'all');
    expect(plan).toEqual({ toMaterialise: [], missed: 0, skipped: 0, nextCursor: cursor, nextRunAt: d('2026-12-05T01:00:00Z'), steps: 0 });
  });

  it('a sparse schedule with nothing in the window still advances the cursor and reports the next run', () => {
    const yearly = parseSchedule('0 0 1 1 *', 'UTC');
    const plan = planMaterialisation(yearly, null, now, DAY, 'skip');
    expect(plan).toEqual({
      toMaterialise: [],
      missed: 0,
      skipped: 0,
      nextCursor: d('2026-12-01T09:30:00Z'),
      nextRunAt: d('2027-01-01T00:00:00Z'),
      steps: 0,
    });
  });

  it('bounds the upcoming list; the cursor then stops at the last one returned', () => {
    const everyMinute = parseSchedule('* * * * *', 'UTC');
    const plan = planMaterialisation(everyMinute, null, now, DAY, 'skip', MAX_MISSED_ALL, { maxUpcoming: 100 });
    expect(plan.toMaterialise).toHaveLength(100);
    expect(plan.nextCursor).toEqual(plan.toMaterialise[99]);
    expect(plan.nextRunAt).toEqual(d('2026-11-30T11:10:00Z'));
    const rest = planMaterialisation(everyMinute, plan.nextCursor, now, DAY, 'skip', MAX_MISSED_ALL, { maxUpcoming: 10_000 });
    expect(rest.toMaterialise[0]).toEqual(plan.nextRunAt);
    expect(plan.toMaterialise.length + rest.toMaterialise.length).toBe(24 * 60 + 1);
  });

  it('keeps the DST rule: the fall-back day in Berlin materialises 02:30 once', () => {
    const s = parseSchedule('30 2 * * *', 'Europe/Berlin');
    const plan = planMaterialisation(s, null, d('2026-10-24T12:00:00Z'), 2 * DAY, 'skip');
    expect(iso(plan.toMaterialise)).toEqual(['2026-10-25T00:30:00Z', '2026-10-26T01:30:00Z']);
  });

  it('cursorBefore turns a stored next_run_at into a cursor that still includes it', () => {
    expect(cursorBefore(null)).toBeNull();
    const nextRunAt = d('2026-11-30T10:00:00Z');
    const plan = planMaterialisation(hourly, cursorBefore(nextRunAt), now, HOUR, 'skip');
    expect(iso(plan.toMaterialise)).toEqual(['2026-11-30T10:00:00Z']);
    expect(nextOccurrences(hourly, cursorBefore(nextRunAt)!, 1)).toEqual([nextRunAt]);
  });

  it('rejects bad arguments', () => {
    expect(() => planMaterialisation(hourly, null, now, -1, 'skip')).toThrow(RangeError);
    expect(() => planMaterialisation(hourly, null, now, HOUR, 'all', 0)).toThrow(RangeError);
    expect(() => planMaterialisation(hourly, null, now, HOUR, 'skip', 1, { maxUpcoming: 0 })).toThrow(RangeError);
    expect(() => planMaterialisation(hourly, new Date(NaN), now, HOUR, 'skip')).toThrow(RangeError);
  });
});

describe('resumedNextRunAt: where a paused schedule goes on', () => {
  const perMinute = parseSchedule('* * * * *', 'UTC');
  const pausedAt = d('2026-11-29T10:22:00Z');
  const now = d('2026-11-29T12:29:50Z');
  it.each([
    ['skip', '2026-11-29T12:30:00Z'],
    ['latest', '2026-11-29T12:29:00Z'],
    ['all', '2026-11-29T10:22:00Z'],
  ] as const)('%s', (policy, expected) => {
    expect(resumedNextRunAt(perMinute, pausedAt, now, policy)).toEqual(d(expected));
  });
  it('keeps a cursor still ahead, or none; finds the latest of a sparse schedule a year back', () => {
    expect(resumedNextRunAt(perMinute, d('2026-11-29T13:00:00Z'), now, 'skip')).toEqual(d('2026-11-29T13:00:00Z'));
    expect(resumedNextRunAt(perMinute, null, now, 'latest')).toBeNull();
    const yearly = parseSchedule('0 3 1 1 *', 'UTC');
    expect(resumedNextRunAt(yearly, d('2025-01-01T03:00:00Z'), now, 'latest')).toEqual(d('2026-01-01T03:00:00Z'));
  });
});
