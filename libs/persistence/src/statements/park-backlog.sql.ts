/**
 * Parks due jobs in dispatch_backlog until their pool has room; a job already parked stays as it
 * was.
 *
 * $1 bigint[] job ids · $2 timestamptz[] run times · $3 text[] pools · $4 int[] tenants · $5 text[] kinds.
 */
export const PARK_BACKLOG_SQL = `INSERT INTO dispatch_backlog (job_id, run_at, pool, tenant_id, kind)
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::int[], $5::text[])
       ON CONFLICT (job_id) DO NOTHING`;
