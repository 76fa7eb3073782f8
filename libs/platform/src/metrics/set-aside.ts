import type { Counter } from 'prom-client';
import type { MetricsService } from './metrics.service';

/**
 * Every statement that sets items aside: completion, claim (workers); promotion, retention,
 * recurring, bulk_match, bulk_apply (the promoter).
 */
export const SET_ASIDE_STATEMENTS = ['completion', 'claim', 'promotion', 'retention', 'recurring', 'bulk_match', 'bulk_apply'] as const;

/**
 * Items a shared statement or sweep set aside so everyone else's work went on: an outcome
 * Postgres refused on a value (statement = completion), a job its claim or promotion could not
 * move (claim, promotion), a finished job retention could not delete (retention, kept), a
 * schedule whose occurrences Postgres refused (recurring, paused), a bulk operation whose step
 * kept failing (bulk_match, bulk_apply). AlmanacValuesSetAside fires on it. Every role registers
 * the same one, every statement at 0 from the start: `increase()` needs a sample before the
 * first set-aside, or a process's first one would never fire the alert.
 */
export function setAsideCounter(metrics: MetricsService): Counter<'statement'> {
  const counter = metrics.counter({
    name: 'almanac_set_aside_total',
    help: 'Items a shared batch statement or sweep set aside so every other item went on (statement = completion: an outcome Postgres refused on a value; claim, promotion: a job whose claim or promotion Postgres refused on a value, now dead; retention: a finished job Postgres would not delete, kept; recurring: a schedule whose occurrences Postgres refused, paused; bulk_match, bulk_apply: a bulk operation failed)',
    labelNames: ['statement'] as const,
  });
  for (const statement of SET_ASIDE_STATEMENTS) counter.inc({ statement }, 0);
  return counter;
}
