/** One page of a list and where the next one starts (null: this was the last). */
export interface Page<T> {
  items: readonly T[];
  next: string | null;
}

/**
 * Every item of a paginated list, fetching each page as the loop reaches it; breaking out of
 * the loop stops fetching. `page(undefined)` is the first page.
 */
export async function* eachItem<T>(page: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const p = await page(cursor);
    yield* p.items;
    cursor = p.next ?? undefined;
  } while (cursor !== undefined);
}
