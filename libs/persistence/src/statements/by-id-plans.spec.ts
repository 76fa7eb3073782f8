import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { COMPLETE_ATTEMPTS } from './complete-attempts.sql';
import { DEMOTE_TO_SCHEDULED_SQL } from './demote-to-scheduled.sql';
import { EXTEND_LEASES_SQL } from './extend-leases.sql';
import { PROMOTE_IDS_SQL } from './promote-ids.sql';
import { RELEASE_DELIVERIES_SQL } from './release-deliveries.sql';
import { RESCUE_RUNNING_SQL } from './rescue-running.sql';

/**
 * Statements that move rows given by id must find them through the primary key, whatever the
 * statistics say. Analyzed while a burst was cold, then promoted and claimed, the table looks to
 * the planner as if it had no queued or running rows; a guard written `state = 'r'` then let it
 * read every running row through jobs_running_lease for each batch (a completion of 186 rows
 * with 50,000 running: 4 ms a row instead of 22 µs).
 */
/** Partial indexes a guard by id must not read whole: each holds rows of one state (or all but cold ones). */
const PARTIAL = /jobs_running_lease|jobs_queued_due|jobs_tenant_list|jobs_cold_due|jobs_cold_tenant/g;

describe('guarded updates by id with running and queued rows the statistics have not seen (Postgres)', () => {
  let db: TestDatabase;
  const ids = ['1', '2'];

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.dataSource.query(`ALTER TABLE jobs SET (autovacuum_enabled = false)`);
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT 1, 'k' || g, 'noop', now() + interval '2 days', 's' FROM generate_series(1, 20000) g`,
    );
    await db.dataSource.query('ANALYZE jobs');
    await db.dataSource.query(`UPDATE jobs SET state = CASE WHEN id % 2 = 0 THEN 'r' ELSE 'q' END::"char", attempts = 1, lease_until = now() + interval '1 minute', run_at = now()`);
  });
  afterAll(() => db.drop());

  /** The generic plan, the one a prepared statement settles on after five runs; seq scans off, as at production size. */
  const genericPlan = (sql: string, types: string, args: string) =>
    db.dataSource.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await tx.query(`PREPARE by_id (${types}) AS ${sql}`);
      const rows: { 'QUERY PLAN': string }[] = await tx.query(`EXPLAIN EXECUTE by_id(${args})`);
      await tx.query('DEALLOCATE by_id');
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  const customPlan = (sql: string, params: unknown[]) =>
    db.dataSource.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      const rows: { 'QUERY PLAN': string }[] = await tx.query(`EXPLAIN ${sql}`, params);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  const n = ids.length;
  const statements: [string, string, string, string, unknown[]][] = [
    [
      'the completion',
      COMPLETE_ATTEMPTS.text,
      'bigint[], int2[], "char"[], float8[], jsonb[], text[], int[], text[], float8[], float8[], text[], timestamptz',
      `'{1,2}', '{1,1}', '{d,d}', '{NULL,NULL}', '{NULL,NULL}', '{NULL,NULL}', '{1,1}', '{succeeded,succeeded}', '{1,1}', '{2,2}', '{w,w}', now()`,
      [ids, [1, 1], ['d', 'd'], [null, null], [null, null], [null, null], [1, 1], ['succeeded', 'succeeded'], [1, 1], [2, 2], ['w', 'w'], new Date()],
    ],
    ['the lease renewal', EXTEND_LEASES_SQL, 'bigint[], int2[], timestamptz, text[]', `'{1,2}', '{1,1}', now(), '{NULL,NULL}'`, [ids, [1, 1], new Date(), Array(n).fill(null)]],
    [
      'the release at shutdown',
      RELEASE_DELIVERIES_SQL,
      'bigint[], int2[], timestamptz, text, timestamptz[]',
      `'{1,2}', '{1,1}', now(), 'w', ARRAY[now(), now()]`,
      [ids, [1, 1], new Date(), 'w', [new Date(), new Date()]],
    ],
    ['the demotion of rows whose enqueue failed', DEMOTE_TO_SCHEDULED_SQL, 'bigint[], timestamptz[]', `'{1,2}', ARRAY[now(), now()]`, [ids, [new Date(), new Date()]]],
  ];

  it.each(statements)('%s finds its rows through the primary key, in its generic and its custom plan', async (_name, sql, types, args, params) => {
    for (const plan of [await genericPlan(sql, types, args), await customPlan(sql, params)]) {
      expect(plan).toMatch(/jobs_pkey/);
      expect(plan).not.toMatch(PARTIAL);
    }
  });

  it('the rescue reads a partial index once, to find its rows, and moves them by primary key', async () => {
    const plan = await genericPlan(RESCUE_RUNNING_SQL, 'timestamptz, int, text, int[]', `now(), 100, 'lost', '{1}'`);
    expect(plan).toMatch(/jobs_pkey/);
    expect(plan.match(PARTIAL)).toHaveLength(1);
  });
});

describe('promotion by id with cold rows the statistics have not seen (Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.dataSource.query(`ALTER TABLE jobs SET (autovacuum_enabled = false)`);
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) SELECT 1, 'k' || g, 'noop', now(), 'd', now() FROM generate_series(1, 20000) g`);
    await db.dataSource.query('ANALYZE jobs');
    await db.dataSource.query(`UPDATE jobs SET state = 's', finished_at = NULL`);
  });
  afterAll(() => db.drop());

  it('finds its rows through the primary key, not by reading every cold row', async () => {
    const plan = await db.dataSource.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      const rows: { 'QUERY PLAN': string }[] = await tx.query(`EXPLAIN ${PROMOTE_IDS_SQL}`, [['1', '2']]);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/jobs_pkey/);
    expect(plan).not.toMatch(PARTIAL);
  });
});
