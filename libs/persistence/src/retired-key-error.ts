/** Raised by the jobs_refuse_retired_keys trigger: an insert named a key retention retired. */
export const RETIRED_KEY_SQLSTATE = 'AL001';

export function isRetiredKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === RETIRED_KEY_SQLSTATE;
}
