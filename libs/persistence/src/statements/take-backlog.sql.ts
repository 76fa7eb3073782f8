/**
 * Takes (deletes and returns) a pool's parked jobs for the tenant-and-kind flows named, up to a
 * count per flow, each flow's oldest run time first: the dispatcher decides how many each flow
 * gets (by weight, skipping kinds their limits hold), so one tenant's backlog never stands in
 * front of another's and a held kind never in front of its tenant's other kinds. One index range
 * per flow (dispatch_backlog_pool_tenant_due). SKIP LOCKED: two dispatchers refilling the same
 * pool take disjoint sets.
 *
 * $1 text pool · $2 int[] tenants · $3 text[] kinds · $4 int[] how many of each.
 */
export const TAKE_BACKLOG_SQL = `DELETE FROM dispatch_backlog b
        WHERE b.job_id IN (SELECT p.job_id FROM unnest($2::int[], $3::text[], $4::int[]) AS w(tenant_id, kind, n),
                             LATERAL (SELECT job_id FROM dispatch_backlog
                                       WHERE pool = $1 AND tenant_id = w.tenant_id AND kind = w.kind
                                       ORDER BY run_at, job_id LIMIT w.n FOR UPDATE SKIP LOCKED) p)
       RETURNING b.job_id::text AS id, b.run_at, b.tenant_id, b.kind`;
