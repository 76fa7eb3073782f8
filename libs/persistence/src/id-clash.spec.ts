import { parseSchedule } from '@almanac/domain';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { BulkOperationsRepository } from './repositories/bulk-operations.repository';
import { SchedulesRepository } from './repositories/schedules.repository';

/**
 * After the database host's clock steps back, `almanac_job_id()` can draw an id it drew before.
 * Here it is made to, once, by a test-only body that returns a taken id on its first call.
 */
describe('an id drawn twice (the database clock stepped back)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(2);
  });
  afterAll(async () => db.drop());

  async function nextIdIs(id: string): Promise<void> {
    await db.dataSource.query(`DROP SEQUENCE IF EXISTS clash_once; CREATE SEQUENCE clash_once`);
    await db.dataSource.query(`CREATE OR REPLACE FUNCTION almanac_job_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        IF nextval('clash_once') = 1 THEN RETURN ${BigInt(id)}; END IF;
        RETURN ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1767225600000) << 12) | (nextval('almanac_job_id_seq') % 4096);
      END $$`);
  }

  it('creates the schedule with the next id drawn, not a 500', async () => {
    const schedules = new SchedulesRepository(db.dataSource);
    const seed = (key: string) => ({
      tenantId: 1, key, kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: null, maxAttempts: 3,
      missed: 'skip' as const, timing: parseSchedule('0 * * * *', 'UTC'), expectWithinSeconds: null,
    });
    const first = await schedules.create(seed('first'));
    if (!('schedule' in first)) throw new Error('not created');
    await nextIdIs(first.schedule.id);
    const second = await schedules.create(seed('second'));
    expect(second).toMatchObject({ created: true, schedule: { key: 'second' } });
    expect('schedule' in second && second.schedule.id).not.toBe(first.schedule.id);
  });

  it('creates the bulk operation with the next id drawn, not a 500', async () => {
    const bulk = new BulkOperationsRepository(db.dataSource);
    const [{ id: tenant }] = await db.dataSource.query<{ id: number }[]>(`INSERT INTO tenants (name) VALUES ('t') RETURNING id`);
    const first = await bulk.create(tenant, 'cancel', { kind: 'noop' }, null, 10);
    await nextIdIs(first!.op.id);
    const second = await bulk.create(tenant, 'cancel', { kind: 'other' }, null, 10);
    expect(second).toMatchObject({ created: true });
    expect(second!.op.id).not.toBe(first!.op.id);
  });
});
