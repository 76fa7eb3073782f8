import { Env, envInt } from '@almanac/platform';
import { parsePoolMap } from './kind-routes';

export interface DispatcherSettings {
  poolMap: Map<string, string>;
  concurrency: number;
  earlyMs: number;
  leaseMarginMs: number;
}

/** Dispatcher role settings; a bad value stops the process at boot with the variable's name. */
export function dispatcherSettingsFromEnv(env: Env): DispatcherSettings {
  return {
    poolMap: parsePoolMap(env),
    concurrency: envInt(env, 'ALMANAC_DISPATCH_CONCURRENCY', 500, { min: 1, max: 10_000 }),
    earlyMs: envInt(env, 'ALMANAC_DISPATCH_EARLY_MS', 1000, { min: 0, max: 60_000 }),
    leaseMarginMs: envInt(env, 'ALMANAC_LEASE_MARGIN_MS', 60_000, { min: 1000, max: 24 * 3600_000 }),
  };
}
