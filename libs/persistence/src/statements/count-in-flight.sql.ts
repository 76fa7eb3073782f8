/**
 * Exact counts of queued and running rows, over their small partial indexes (jobs_queued_due,
 * jobs_running_lease).
 *
 * No parameters.
 */
export const COUNT_IN_FLIGHT_SQL = `SELECT (SELECT count(*) FROM jobs WHERE state = 'q')::float8 AS q,
              (SELECT count(*) FROM jobs WHERE state = 'r')::float8 AS r`;
