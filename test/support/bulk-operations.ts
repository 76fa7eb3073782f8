import { createDataSource } from '@almanac/persistence';
import type { DataSource } from 'typeorm';

/**
 * Makes chosen bulk operations' matches fail: a trigger refuses their chunks (22003, with
 * `message`). Returns the function that chooses them (TRUNCATE poisoned_operations clears the choice).
 */
export async function installChunkPoison(db: DataSource, message = 'poison'): Promise<(...ids: string[]) => Promise<unknown>> {
  await db.query(`CREATE TABLE poisoned_operations (id bigint PRIMARY KEY)`);
  await db.query(`CREATE FUNCTION poison_chunks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF EXISTS (SELECT 1 FROM poisoned_operations WHERE id = NEW.operation_id) THEN RAISE EXCEPTION '${message.replace(/'/g, "''")}' USING ERRCODE = '22003'; END IF;
    RETURN NEW; END $$`);
  await db.query(`CREATE TRIGGER poison_chunks BEFORE INSERT ON bulk_operation_chunks FOR EACH ROW EXECUTE FUNCTION poison_chunks()`);
  return (...ids) => db.query(`INSERT INTO poisoned_operations SELECT unnest($1::bigint[])`, [ids]);
}

/** As if `ms` had passed since the operation's last counted failure (the sweep counts one per spacing interval). */
export async function ageLastFailure(db: DataSource, id: string, ms = 10_000): Promise<void> {
  await db.query(`UPDATE bulk_operations SET last_failure_at = last_failure_at - make_interval(secs => $2::float8 / 1000) WHERE id = $1`, [id, ms]);
}

/**
 * Runs `fn` with a data source that waits at most 100 ms for a row lock, while another
 * transaction holds job `jobId`'s row.
 */
export async function whileJobRowHeld<T>(db: DataSource, url: string, jobId: string, fn: (impatient: DataSource) => Promise<T>): Promise<T> {
  const impatient = createDataSource({ url, poolSize: 2, lockTimeoutMs: 100 });
  await impatient.initialize();
  const holder = db.createQueryRunner();
  await holder.startTransaction();
  try {
    await holder.query(`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, [jobId]);
    return await fn(impatient);
  } finally {
    await holder.rollbackTransaction();
    await holder.release();
    await impatient.destroy();
  }
}
