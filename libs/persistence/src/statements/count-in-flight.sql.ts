/**
 * Queued and running rows are counted exactly up to this many each; past it, the planner's
 * estimate stands (no less than it). Counted in full, a 10-million-row backlog was its whole
 * partial index read every minute by every promoter replica for one gauge.
 */
export const IN_FLIGHT_EXACT_UP_TO = 100_000;

/**
 * Counts of queued and running rows, each up to $1 (IN_FLIGHT_EXACT_UP_TO), over their partial
 * indexes (jobs_queued_due, jobs_running_lease): a count of $1 means at least that many.
 *
 * $1: the most each count reads.
 */
export const COUNT_IN_FLIGHT_SQL = `SELECT (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'q' LIMIT $1) q)::float8 AS q,
              (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'r' LIMIT $1) r)::float8 AS r`;
