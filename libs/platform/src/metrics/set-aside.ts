import type { Counter } from 'prom-client';
import type { MetricsService } from './metrics.service';

/**
 * Items a shared statement or sweep set aside so everyone else's work went on: an outcome
 * Postgres refused on a value (statement = completion), a job its claim or promotion could not move (claim, promotion), a bulk operation whose step kept failing
 * (bulk_match, bulk_apply). AlmanacValuesSetAside fires on it. Every role registers the same one.
 */
export function setAsideCounter(metrics: MetricsService): Counter<'statement'> {
  return metrics.counter({
    name: 'almanac_set_aside_total',
    help: 'Items a shared batch statement or sweep set aside so every other item went on (statement = completion: an outcome Postgres refused on a value; claim, promotion: a job whose claim or promotion Postgres refused on a value, now dead; bulk_match, bulk_apply: a bulk operation failed)',
    labelNames: ['statement'] as const,
  });
}
