import { DataSource, EntityManager, type QueryRunner } from 'typeorm';

/**
 * Where a repository's SQL runs: the shared DataSource (a pooled connection per statement) or
 * the EntityManager of an open transaction, so callers can compose several repository calls in
 * one commit (`dataSource.transaction((tx) => …)`).
 */
export type Db = DataSource | EntityManager;

export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

/**
 * A statement each connection parses and plans once (a named prepared statement), for those run
 * per job: parsing and planning the claim cost 0.3-0.6 ms a statement here, more than executing
 * it for 50 rows (0.2 ms). Its plan is generic after five runs, so its text must not need
 * a custom one (arrays through `unnest`, ids through the primary key).
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

export function prepared(name: string, text: string): PreparedStatement {
  return { name, text };
}

/** Runs one parameterised statement and returns its rows and affected-row count. */
export async function sql<T = Record<string, unknown>>(db: Db, statement: string | PreparedStatement, params: unknown[] = []): Promise<SqlResult<T>> {
  const txRunner = db instanceof EntityManager ? db.queryRunner : undefined;
  const runner = txRunner ?? (db instanceof EntityManager ? db.connection : db).createQueryRunner();
  try {
    // TypeORM hands its query to pg's Client.query, which takes a config object as well; pg
    // writes the values into it, so each call gets its own.
    const query = typeof statement === 'string' ? statement : ({ name: statement.name, text: statement.text } as unknown as string);
    const res = await runner.query(query, params, true);
    const rows = (res.records ?? []) as T[];
    return { rows, rowCount: res.affected ?? rows.length };
  } catch (err) {
    // TypeORM attaches every parameter to the error; batches carry payloads, which must never
    // reach a log line.
    if (err instanceof Error && 'parameters' in err) (err as { parameters: unknown }).parameters = `[${params.length} parameters redacted]`;
    throw err;
  } finally {
    if (!txRunner) await runner.release();
  }
}

/** typeorm's PostgresQueryRunner, by its private part: the release that hands an error on to pg-pool. */
type PgRunner = { releasePostgresConnection(err: Error): Promise<void> };

/**
 * Closes a connection instead of giving it back, for a session that must run nothing more: a
 * transaction not to be rolled back into use, a statement no one waits for. pg-pool destroys a
 * client released with an error (typeorm 1.x's public release() drops its argument); its
 * backend, polling the socket (`client_connection_check_interval`, data-source.ts), ends what it
 * runs within a second, with no statement of ours on a pool full when deadlines pass.
 */
export async function discardConnection(runner: QueryRunner, why: Error): Promise<void> {
  await (runner as unknown as PgRunner).releasePostgresConnection(why);
}

/**
 * Runs `work` on one pooled connection, for a read or write whose caller may stop waiting (an API
 * request past its deadline, or whose client went away). When `signal` aborts first, the call rejects
 * with its reason at once and the connection is discarded, its backend ended: a statement of a
 * request answered 503 ran on for up to statement_timeout (30 s against a 2.5 s deadline),
 * holding a pooled connection while the client's retries added more.
 */
export async function onConnection<T>(db: DataSource, signal: AbortSignal | undefined, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = db.createQueryRunner();
  if (!signal) {
    try {
      return await work(runner);
    } finally {
      await runner.release();
    }
  }
  signal.throwIfAborted();
  // The reason itself, not a copy: callers recognise it (the API's deadline); an Error of another realm (a DOMException) is one too.
  const reason = () => signal.reason as Error;
  let stop = (): void => undefined;
  const stopped = new Promise<never>((_, reject) => (stop = () => reject(reason())));
  signal.addEventListener('abort', stop, { once: true });
  // Who gives the connection back: this call, or (once abandoned) whatever settles last.
  let mine = true;
  try {
    // The caller stops waiting for a pooled connection too (pg-pool cannot drop a waiter: the connection, when it comes, goes back).
    const connecting = runner.connect();
    await Promise.race([connecting, stopped]).catch((err: unknown) => {
      if (signal.aborted) {
        mine = false;
        void connecting.then(() => runner.release(), () => undefined);
      }
      throw err;
    });
    const running = work(runner);
    return await Promise.race([running, stopped]).catch(async (err: unknown) => {
      if (signal.aborted) {
        running.catch(() => undefined); // it fails as its connection closes
        mine = false;
        // Not waited for: the caller is answered now; its backend ends what it runs within a second.
        void discardConnection(runner, signal.reason instanceof Error ? signal.reason : new Error('aborted')).catch(() => undefined); // pg-pool keeps a client released without one
      }
      throw err;
    });
  } finally {
    signal.removeEventListener('abort', stop);
    if (mine) await runner.release();
  }
}

/** Ids travel as strings; anything that is not a positive bigint can match no row. */
export function isJobIdString(id: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(id) && BigInt(id) <= 9223372036854775807n;
}
