/**
 * Due queued rows per tenant among the oldest $2 of them: how many, and the oldest run time (the
 * tenant-backlog sweep's gauges and its top-N ranking). Past $2 rows the counts read low and a
 * tenant whose rows all come later is missing; its oldest job is younger than the last row read.
 *
 * $1 timestamptz now · $2 int the most rows read.
 *
 * Cost: an ordered walk of jobs_queued_due that stops after $2 rows, each a heap visit for its
 * tenant (no index carries the tenant of queued rows; one would cost every promotion and claim a
 * write). Run it with bitmap scans off (TenantStatsRepository): the planner guesses ~1 % of the
 * due queued rows (state and run_at are correlated: queued rows sit near now) and picks a bitmap
 * scan of all of them plus a sort, which ignores $2 (2.5 s for 200,000 scattered rows).
 * Measured with EXPLAIN ANALYZE on 10 M rows (9.8 M cold over a year, 200,000 due, 50 tenants;
 * 2 GB heap, 128 MB shared_buffers; 2026-12-01): due rows laid out as promotion appends them
 * (~30 a heap page) 0.07–0.28 s at $2 = 50,000 and 0.19–0.38 s at $2 = 200,000; the worst layout,
 * every due row on a heap page of its own, 0.8–1.0 s / 2.6 s with the heap in the OS cache and
 * 5.4 s / 7.2 s read from disk. About 1.5 µs a row typical, 13 µs at worst.
 */
export const TENANT_DUE_BACKLOG_SQL = `SELECT tenant_id, count(*)::int AS n, min(run_at) AS oldest
         FROM (SELECT tenant_id, run_at FROM jobs WHERE state = 'q' AND run_at <= $1
                ORDER BY run_at LIMIT $2) AS due
        GROUP BY tenant_id`;
