/**
 * Whether an insert into `table` failed on an id drawn twice. `almanac_job_id()` repeats an id
 * only when the database host's clock stepped back into a millisecond it already made ids in,
 * and then only for a sequence value 4096 × k later; the insert's next try draws another.
 */
export function isIdClash(err: unknown, table: string): boolean {
  const e = typeof err === 'object' && err !== null ? (err as { code?: unknown; constraint?: unknown }) : {};
  return e.code === '23505' && e.constraint === `${table}_pkey`;
}

/** `insert` again (at most `tries` in all) while it fails on an id drawn twice. */
export async function retryingIdClash<T>(table: string, insert: () => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await insert();
    } catch (err) {
      if (attempt >= tries || !isIdClash(err, table)) throw err;
    }
  }
}
