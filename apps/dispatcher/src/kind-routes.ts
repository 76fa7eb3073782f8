import { ConfigError, Env, envList } from '@almanac/platform';
import { HandlerRegistry, POOL_NAME_PATTERN } from '../../worker/src/handlers';

export const DEFAULT_POOL = 'default';
/** Lease for a kind this build has no handler for (a newer worker may know it). */
export const UNKNOWN_KIND_TIMEOUT_MS = 30_000;

/**
 * ALMANAC_POOLS: `kind=pool` pairs, comma-separated (`http=io,charge=billing`). Kinds not
 * listed go to the handler's own `pool`, else `default`.
 */
export function parsePoolMap(env: Env): Map<string, string> {
  const map = new Map<string, string>();
  for (const pair of envList(env, 'ALMANAC_POOLS', [])) {
    const m = /^([a-z][a-z0-9_.-]{0,63})=([^=]+)$/.exec(pair);
    if (!m || !POOL_NAME_PATTERN.test(m[2])) {
      throw new ConfigError(`ALMANAC_POOLS must be kind=pool pairs like http=io,charge=billing (bad item ${JSON.stringify(pair)})`);
    }
    if (map.has(m[1])) throw new ConfigError(`ALMANAC_POOLS names kind ${m[1]} twice`);
    map.set(m[1], m[2]);
  }
  return map;
}

/** Where a kind runs and how long its lease is. */
export class KindRoutes {
  constructor(
    private readonly registry: HandlerRegistry,
    private readonly poolMap: ReadonlyMap<string, string>,
    /** Added to the handler timeout: time waiting in the pool queue plus commit time. */
    private readonly leaseMarginMs: number,
  ) {}

  pool(kind: string): string {
    return this.poolMap.get(kind) ?? this.registry.get(kind)?.pool ?? DEFAULT_POOL;
  }

  leaseMs(kind: string): number {
    return (this.registry.get(kind)?.timeoutMs ?? UNKNOWN_KIND_TIMEOUT_MS) + this.leaseMarginMs;
  }
}
