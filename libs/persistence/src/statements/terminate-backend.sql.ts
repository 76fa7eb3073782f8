/**
 * Ends the backend of a connection the pool just discarded in the middle of a transaction: it
 * notices the closed socket only at its next read or write, so a statement still running or
 * waiting on a lock would hold its locks until statement_timeout. Only a backend of this role and
 * database inside a transaction: behind PgBouncer the client's pid is a made-up key, which must
 * end no one else's session.
 *
 * $1 int the backend's pid (the pg client's processID).
 */
export const TERMINATE_BACKEND_SQL = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE pid = $1 AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
          AND datname = current_database() AND usename = current_user`;
