import { KIND_PATTERN, POOL_NAME_PATTERN } from '@almanac/domain';
import { ConfigError, Env, readSetting } from '@almanac/platform';
import { type HandlerDefinition } from './handler';

export const DEFAULT_POOL = 'default';

/**
 * ALMANAC_POOLS: `kind=pool` pairs, comma-separated (`http=io,charge=billing`). Kinds not
 * listed go to the pool the handler declares, else `default`.
 */
export function parsePoolMap(env: Env): Map<string, string> {
  const map = new Map<string, string>();
  for (const pair of readSetting(env, 'ALMANAC_POOLS')) {
    const m = /^([^=]+)=([^=]+)$/.exec(pair);
    if (!m || !KIND_PATTERN.test(m[1]) || !POOL_NAME_PATTERN.test(m[2])) {
      throw new ConfigError(`ALMANAC_POOLS must be kind=pool pairs like http=io,charge=billing (bad item ${JSON.stringify(pair)})`);
    }
    if (map.has(m[1])) throw new ConfigError(`ALMANAC_POOLS names kind ${m[1]} twice`);
    map.set(m[1], m[2]);
  }
  return map;
}

/**
 * Which pool runs a kind: ALMANAC_POOLS, then the pool its handler declares, then `default`.
 * The worker knows the handlers and registers kind → pool (table job_kinds); the dispatcher reads
 * that registration, so it routes without importing any handler code.
 */
export class KindRoutes {
  private declared: ReadonlyMap<string, string>;

  constructor(
    private readonly poolMap: ReadonlyMap<string, string>,
    declared: ReadonlyMap<string, string | undefined> = new Map(),
  ) {
    this.declared = onlyDefined(declared);
  }

  /** A worker's routes: ALMANAC_POOLS (`poolMap`) over the pools its handlers declare. */
  static forHandlers(poolMap: ReadonlyMap<string, string>, handlers: readonly HandlerDefinition[]): KindRoutes {
    return new KindRoutes(poolMap, new Map(handlers.map((h) => [h.kind, h.pool])));
  }

  /** Replaces the handler-declared pools (the dispatcher refreshes them from the workers). */
  setDeclared(declared: ReadonlyMap<string, string | undefined>): void {
    this.declared = onlyDefined(declared);
  }

  pool(kind: string): string {
    return this.poolMap.get(kind) ?? this.declared.get(kind) ?? DEFAULT_POOL;
  }

  /** Every pool a kind is routed to by configuration (the dispatcher watches these even with no worker). */
  configuredPools(): string[] {
    return [...new Set([DEFAULT_POOL, ...this.poolMap.values(), ...this.declared.values()])].sort();
  }
}

function onlyDefined(m: ReadonlyMap<string, string | undefined>): Map<string, string> {
  return new Map([...m].filter((e): e is [string, string] => e[1] !== undefined));
}
