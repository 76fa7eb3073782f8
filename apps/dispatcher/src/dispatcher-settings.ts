import { parsePoolMap } from '@almanac/delivery';
import { Env, envInt } from '@almanac/platform';

export interface DispatcherSettings {
  poolMap: Map<string, string>;
  concurrency: number;
  /** In flight per pool = live capacity × this (ready-list items plus running handlers). */
  prefetch: number;
}

/** Dispatcher role settings; a bad value stops the process at boot with the variable's name. */
export function dispatcherSettingsFromEnv(env: Env): DispatcherSettings {
  return {
    poolMap: parsePoolMap(env),
    concurrency: envInt(env, 'ALMANAC_DISPATCH_CONCURRENCY', 500, { min: 1, max: 10_000 }),
    prefetch: envInt(env, 'ALMANAC_DISPATCH_PREFETCH', 2, { min: 1, max: 100 }),
  };
}
