import { type Db, sql } from '../sql';

/**
 * The database's clock, by which leases, heartbeats, job starts and every `now()` in a statement
 * are written: what is due, late or missed is judged by it rather than by a host's clock alone
 * (a host running fast judged runs not due yet by the database's clock). statement_timestamp(),
 * not now(): read inside a transaction after a lock wait, now() is the transaction's start.
 *
 * No parameters.
 */
export const DATABASE_NOW_SQL = `SELECT statement_timestamp() AS db_now`;

/** Now by the database's clock (DATABASE_NOW_SQL): the one read of it, for a sweep's run or a transaction. */
export async function databaseNow(db: Db): Promise<Date> {
  return (await sql<{ db_now: Date }>(db, DATABASE_NOW_SQL)).rows[0].db_now;
}
