import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { decodeState } from '../job-state.codec';
import { JobsRepository } from '../repositories/jobs.repository';
import { JobEntity, ScheduleEntity } from '.';

describe('TypeORM entities match the migrated schema', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db.drop());

  it('reads a job through JobEntity with the same values the repository returns', async () => {
    const runAt = new Date('2027-03-01T12:00:00Z');
    const [o] = await new JobsRepository(db.dataSource).insertBatch(4, [
      { kind: 'noop', key: 'entity-1', runAt, payload: { b: 1, a: [2] }, state: 'queued', maxAttempts: 5 },
    ]);
    const e = await db.dataSource.getRepository(JobEntity).findOneByOrFail({ id: o.job.id });
    expect(e).toMatchObject({ id: o.job.id, tenantId: 4, kind: 'noop', key: 'entity-1', runAt, attempts: 0, maxAttempts: 5, payload: { b: 1, a: [2] } });
    expect(decodeState(e.state)).toBe('queued');
    expect(Object.keys(e.payload as object)).toEqual(['b', 'a']); // json keeps the client's key order
  });

  it('reads a schedule through ScheduleEntity', async () => {
    const [row] = await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload) VALUES (4, 'daily', 'noop', '0 9 * * *', 'Europe/Paris', '{"x":1}') RETURNING id::text AS id`,
    );
    const s = await db.dataSource.getRepository(ScheduleEntity).findOneByOrFail({ id: row.id });
    expect(s).toMatchObject({ tenantId: 4, key: 'daily', cron: '0 9 * * *', timezone: 'Europe/Paris', paused: false, missed: 'skip', payload: { x: 1 }, version: 1 });
  });
});
