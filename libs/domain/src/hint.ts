/**
 * A queued row on its way to a handler: the one type from the hot queue to the claim. A hint is
 * cheap and may be stale (the row was cancelled, moved or already run): the worker's claim
 * checks the row, which decides. Time is epoch milliseconds.
 */
export interface Hint {
  /** The row id (a decimal string: ids are 53-bit integers). */
  id: string;
  tenantId: number;
  kind: string;
  /** The row's run time when the hint was made, epoch ms. */
  dueMs: number;
}

/** Numeric order of decimal row ids (no sign, no leading zeros): the shorter is smaller, else the text decides. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
