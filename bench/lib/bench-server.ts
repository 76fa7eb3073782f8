/**
 * The Postgres server the benches create their databases on. Its own module, free of any import
 * from apps/ or libs/, so a harness that runs another checkout (--root) never loads this tree's
 * sources just to find the server.
 */

/** Admin URL of the server to benchmark (a database on it is created and dropped). */
export function benchServerUrl(env: NodeJS.ProcessEnv = process.env): string {
  return (env.ALMANAC_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/$/, '');
}
