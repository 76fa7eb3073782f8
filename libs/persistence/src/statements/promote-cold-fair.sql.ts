/**
 * Fair promotion (issue 15 item 5): a batch is shared between the tenants that have rows in the
 * earliest due hour bucket, h0, so one tenant's millions of rows in that hour cannot hold back
 * another tenant's row there. Order by whole hour bucket first (an earlier hour always goes
 * first), then round robin: each of the k tenants present in h0 gets up to ceil($2 / k) of its
 * rows there, in index order. What the tenants leave of the batch (a tenant with few rows, or
 * tenants not in $3) the caller fills with PROMOTE_COLD_SQL, in hour order as before, so a short
 * batch still means nothing is left to promote.
 *
 * Why not earliest run_at first across tenants: the cold indexes hold the hour, not run_at, so
 * ordering inside a 5 M-row bucket would read and sort the bucket for every batch, or need a
 * per-row run_at index (~32 B/job against ~9.5). Round robin inside h0 is cheaper and stronger:
 * the quiet tenant's rows go out in the first batch however many rows sort before them.
 *
 * Every tenant lookup is an equality on both columns of jobs_cold_tenant, a LATERAL with a LIMIT
 * (an EXISTS became a semi-join that read and de-duplicated every due row). The planner cannot
 * know that a tenant's rows are sparse in a big bucket: when the heap is in hour order (a bulk
 * of one hour inserted together) it prices "scan the bucket in jobs_cold_due, filter the tenant"
 * far below the tenant index and would read the whole bucket per tenant per batch. The caller
 * runs this with planner costs that count tuples (SweepsRepository.promoteColdBatch).
 *
 * $1 timestamptz horizon · $2 int batch size · $3 int[] tenants with due rows (DUE_COLD_TENANTS_SQL).
 */
export const PROMOTE_COLD_FAIR_SQL = `WITH h0 AS MATERIALIZED (
    SELECT almanac_hour(run_at) AS h FROM jobs
     WHERE state = 's' AND almanac_hour(run_at) <= almanac_hour($1::timestamptz)
     ORDER BY almanac_hour(run_at) LIMIT 1
  ), present AS MATERIALIZED (
    SELECT t.t, h0.h FROM h0, unnest($3::int[]) t
     CROSS JOIN LATERAL (SELECT FROM jobs
                          WHERE state = 's' AND tenant_id = t.t AND almanac_hour(run_at) = h0.h LIMIT 1) e
     ORDER BY random()
  ), claimed AS (
    SELECT c.id FROM present p CROSS JOIN LATERAL (
      SELECT id FROM jobs
       WHERE state = 's' AND tenant_id = p.t AND almanac_hour(run_at) = p.h
       LIMIT (SELECT ceil($2::numeric / greatest(count(*), 1))::int FROM present)
         FOR UPDATE SKIP LOCKED) c
     LIMIT $2::int
  )
  UPDATE jobs j SET state = 'q'
    FROM claimed c
   WHERE j.id = c.id AND j.state::text = 's'
  RETURNING j.id::text AS id, j.run_at, j.tenant_id, j.kind`;
