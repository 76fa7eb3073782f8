import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-db';
import { type NewSchedule, SchedulesRepository } from './schedules.repository';

describe('SchedulesRepository (Postgres)', () => {
  let db: TestDatabase;
  let schedules: SchedulesRepository;

  beforeAll(async () => {
    db = await createTestDatabase(4);
    schedules = new SchedulesRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  const seed = (key: string): NewSchedule => ({
    tenantId: 1,
    key,
    kind: 'noop',
    cron: '0 * * * *',
    timezone: 'UTC',
    payload: null,
    maxAttempts: 3,
    missed: 'skip',
    nextRunAt: new Date('2026-11-29T11:00:00Z'),
  });

  it('creates once by key; the same key again returns the existing schedule', async () => {
    const a = await schedules.create(seed('daily'));
    const b = await schedules.create(seed('daily'));
    expect(a.created).toBe(true);
    expect(b).toEqual({ created: false, schedule: a.schedule });
  });

  it('a create racing deletes of the same key never fails: it creates or finds the schedule', async () => {
    // The window is between a conflicting insert and the read of the row that conflicted.
    await schedules.create(seed('churn'));
    const failures: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      const results = await Promise.allSettled([
        schedules.create(seed('churn')),
        db.dataSource.query(`DELETE FROM schedules WHERE tenant_id = 1 AND key = 'churn'`),
        schedules.create(seed('churn')),
      ]);
      for (const r of results) if (r.status === 'rejected') failures.push(r.reason);
    }
    expect(failures).toEqual([]);
  });
});
