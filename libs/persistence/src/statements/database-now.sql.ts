/**
 * The database's clock, by which leases and heartbeats are written: sweeps judge lateness by it
 * rather than by their host's clock alone.
 *
 * No parameters.
 */
export const DATABASE_NOW_SQL = `SELECT now() AS db_now`;
