import { compareIds } from '@almanac/domain';

/**
 * `items` sorted by their job id, ascending. Every statement that updates several jobs by id
 * takes their row locks in this order (the claim, completion, lease renewal, release and demotion
 * through their id lists, a bulk chunk by `ORDER BY j.id`), so two of them over the same rows
 * queue behind each other. In the order a caller happened to send (a pool's due order, the order
 * handlers finished), a heartbeat's renewal of [a, b] beside a group commit of [b, a], or a claim
 * beside a bulk chunk, could deadlock: Postgres then fails one of them after `deadlock_timeout`.
 */
export function inIdOrder<T>(items: readonly T[], idOf: (item: T) => string): T[] {
  return [...items].sort((a, b) => compareIds(idOf(a), idOf(b)));
}
