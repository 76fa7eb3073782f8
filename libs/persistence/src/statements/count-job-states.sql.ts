/**
 * Exact rows per state code: the fallback for a table never analysed (a small one).
 *
 * No parameters.
 */
export const COUNT_JOB_STATES_SQL = `SELECT state, count(*)::float8 AS n FROM jobs GROUP BY state`;
