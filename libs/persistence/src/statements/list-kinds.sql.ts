/** Every registered kind with its pool, timeout and payload schema (a few dozen rows: read whole). */
export const LIST_KINDS_SQL = `SELECT kind, pool, timeout_ms, payload_schema, registered_by, registered_at FROM job_kinds ORDER BY kind`;
