import { planOf } from '@almanac/testing/plans';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { CLAIM_FOR_RUN } from './claim-for-run.sql';
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
  // A batch as large as the worker sends: a two-id array made the nested loop cheapest anyway.
  const ids = Array.from({ length: 500 }, (_, i) => String(i + 1));
  const each = <T>(v: T): T[] => ids.map(() => v);

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

  const statements: [string, string, string, string, unknown[]][] = [
    ['the claim', CLAIM_FOR_RUN.text, 'bigint[], timestamptz, timestamptz, int', `'{1,2}', now(), now(), 1`, [ids, new Date(), new Date(), 1]],
    [
      'the completion',
      COMPLETE_ATTEMPTS.text,
      'bigint[], int2[], "char"[], float8[], jsonb[], text[], int[], text[], float8[], float8[], text[], timestamptz',
      `'{1,2}', '{1,1}', '{d,d}', '{NULL,NULL}', '{NULL,NULL}', '{NULL,NULL}', '{1,1}', '{succeeded,succeeded}', '{1,1}', '{2,2}', '{w,w}', now()`,
      [ids, each(1), each('d'), each(null), each(null), each(null), each(1), each('succeeded'), each(1), each(2), each('w'), new Date()],
    ],
    ['the lease renewal', EXTEND_LEASES_SQL, 'bigint[], int2[], timestamptz, text[]', `'{1,2}', '{1,1}', now(), '{NULL,NULL}'`, [ids, each(1), new Date(), each(null)]],
    [
      'the release at shutdown',
      RELEASE_DELIVERIES_SQL,
      'bigint[], int2[], timestamptz, text, timestamptz[]',
      `'{1,2}', '{1,1}', now(), 'w', ARRAY[now(), now()]`,
      [ids, each(1), new Date(), 'w', each(new Date())],
    ],
    ['the demotion of rows whose enqueue failed', DEMOTE_TO_SCHEDULED_SQL, 'bigint[], timestamptz[]', `'{1,2}', ARRAY[now(), now()]`, [ids, each(new Date())]],
  ];

  it.each(statements)('%s finds its rows through the primary key, in its generic and its custom plan', async (_name, sql, types, args, params) => {
    for (const plan of [await planOf(db.dataSource, sql, [], { types, args }), await planOf(db.dataSource, sql, params)]) {
      expect(plan).toMatch(/jobs_pkey/);
      expect(plan).not.toMatch(PARTIAL);
      expect(plan).not.toMatch(/Seq Scan on job_attempts/); // a completion sent again looks up its own history row by key
    }
  });

  it('the rescue reads a partial index once, to find its rows, and moves them by primary key', async () => {
    const plan = await planOf(db.dataSource, RESCUE_RUNNING_SQL, [], { types: 'timestamptz, int, text, int[]', args: `now(), 100, 'lost', '{1}'` });
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
    const plan = await planOf(db.dataSource, PROMOTE_IDS_SQL, [['1', '2']]);
    expect(plan).toMatch(/jobs_pkey/);
    expect(plan).not.toMatch(PARTIAL);
  });
});
