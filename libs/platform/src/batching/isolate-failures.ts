/**
 * One statement for a batch fails for every item in it when one item's value is refused (a
 * string Postgres cannot store, a number out of range): a group commit of many tenants' jobs
 * then failed again on every retry. runIsolated runs the batch; when it fails on a value, it runs
 * each group (a tenant's items) on its own, and a group that fails in halves, down to the items
 * that fail alone, which go to `setAside`. Every other item is written within the same call. A
 * failure that is not about a value (the database is away) is thrown as it was, for the caller's
 * retry of the whole batch.
 */
export interface IsolateOptions<I> {
  /** Writes some items; throws when the statement fails. */
  run: (items: I[]) => Promise<void>;
  /** Whether `err` was about a value of the items (e.g. a Postgres data exception). */
  isValueError: (err: unknown) => boolean;
  /** What an item that fails alone becomes (written another way, or dropped and counted). */
  setAside: (item: I, err: unknown) => Promise<void>;
  /** Items that fail together first: one tenant's bad value must not split the others' batch. */
  groupOf?: (item: I) => string | number;
}

export async function runIsolated<I>(items: I[], o: IsolateOptions<I>): Promise<void> {
  try {
    await o.run(items);
    return;
  } catch (err) {
    if (!o.isValueError(err)) throw err;
    if (items.length === 1) return o.setAside(items[0], err);
    const groups = o.groupOf ? groupsOf(items, o.groupOf) : [items];
    if (groups.length > 1) {
      for (const group of groups) await runIsolated(group, o);
      return;
    }
    const half = Math.ceil(items.length / 2);
    await runIsolated(items.slice(0, half), { ...o, groupOf: undefined });
    await runIsolated(items.slice(half), { ...o, groupOf: undefined });
  }
}

function groupsOf<I>(items: I[], key: (item: I) => string | number): I[][] {
  const groups = new Map<string | number, I[]>();
  for (const item of items) {
    const k = key(item);
    const g = groups.get(k);
    if (g) g.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}
