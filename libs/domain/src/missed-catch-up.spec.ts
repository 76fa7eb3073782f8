import { planMaterialisation } from './missed';
import { parseSchedule } from './schedule';

const d = (s: string) => new Date(s);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('planMaterialisation: a catch-up in slices (maxSteps)', () => {
  const everyMinute = parseSchedule('* * * * *', 'UTC');
  const now = d('2026-11-30T09:30:00Z');

  it.each(['skip', 'latest', 'all'] as const)('a catch-up bounded by maxSteps (%s) gives, slice by slice, what one unbounded call gives', (policy) => {
    const whole = planMaterialisation(everyMinute, d('2026-11-25T09:30:00Z'), now, HOUR, policy, 1000);
    const sliced = { toMaterialise: [] as Date[], missed: 0, skipped: 0, calls: 0 };
    let cursor: Date = d('2026-11-25T09:30:00Z');
    for (let last = false; !last; sliced.calls++) {
      const plan = planMaterialisation(everyMinute, cursor, now, HOUR, policy, 1000, { maxSteps: 1500 });
      expect(plan.steps).toBeLessThanOrEqual(1500 + (policy === 'all' ? 1000 : policy === 'latest' ? 1 : 0)); // + the window stepped again
      sliced.toMaterialise.push(...plan.toMaterialise);
      sliced.missed += plan.missed;
      sliced.skipped += plan.skipped;
      last = plan.toMaterialise.length > 0; // the slice that reached now
      cursor = plan.nextCursor;
    }
    expect(sliced.calls).toBeGreaterThan(4); // 7,199 missed in slices of at most 1,500
    expect({ ...sliced, calls: 0 }).toEqual({ toMaterialise: whole.toMaterialise, missed: whole.missed, skipped: whole.skipped, calls: 0 });
  });

  it('a cap past the step budget still moves maxSteps a call (it moved one: a year took 500,000 calls)', () => {
    const month = planMaterialisation(everyMinute, new Date(now.getTime() - 30 * DAY), now, HOUR, 'all', 25_000, { maxSteps: 20_000 });
    expect(month.missed).toBeGreaterThanOrEqual(20_000); // 43,200: done in one call, 25,000 run
    const start = now.getTime() - 60 * DAY;
    const plan = planMaterialisation(everyMinute, new Date(start), now, HOUR, 'all', 25_000, { maxSteps: 20_000 });
    expect(plan).toMatchObject({ toMaterialise: [], missed: 20_000, skipped: 20_000, steps: 45_000 });
    expect(plan.nextRunAt?.getTime()).toBe(start + 20_001 * 60e3); // the first of the window kept
  });

  it('maxSteps 0 stops at the first missed occurrence, having stepped none', () => {
    const cursor = d('2026-11-30T08:00:00Z');
    const plan = planMaterialisation(everyMinute, cursor, now, HOUR, 'all', 1000, { maxSteps: 0 });
    expect(plan).toMatchObject({ toMaterialise: [], missed: 0, skipped: 0, steps: 0, nextRunAt: d('2026-11-30T08:01:00Z') });
  });

  it('maxSteps 0 still plans a schedule that is not behind', () => {
    const plan = planMaterialisation(everyMinute, new Date(now.getTime() - 1), now, HOUR, 'all', 1000, { maxSteps: 0 });
    expect(plan.toMaterialise).toHaveLength(61);
  });

  it.each([-1, 1.5])('rejects maxSteps %p', (maxSteps) => {
    expect(() => planMaterialisation(everyMinute, null, now, HOUR, 'all', 1000, { maxSteps })).toThrow(RangeError);
  });
});
