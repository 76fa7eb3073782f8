import { ConfigError } from '@almanac/platform';
import { chargeHandler, defineHandler, HandlerRegistry, noopHandler } from '../../worker/src/handlers';
import { KindRoutes, parsePoolMap, UNKNOWN_KIND_TIMEOUT_MS } from './kind-routes';

describe('kind routes', () => {
  const slow = defineHandler({ kind: 'report', timeoutMs: 120_000, pool: 'reports', handle: async () => ({ type: 'completed' }) });
  const registry = new HandlerRegistry([noopHandler, chargeHandler, slow]);

  it('routes by ALMANAC_POOLS, then the handler pool, then default; leases by timeout + margin', () => {
    const routes = new KindRoutes(registry, parsePoolMap({ ALMANAC_POOLS: 'charge=billing, http=io' }), 60_000);
    expect(['charge', 'http', 'report', 'noop', 'unknown'].map((k) => routes.pool(k))).toEqual(['billing', 'io', 'reports', 'default', 'default']);
    expect(routes.leaseMs('report')).toBe(180_000);
    expect(routes.leaseMs('unknown')).toBe(UNKNOWN_KIND_TIMEOUT_MS + 60_000);
  });

  it('rejects a malformed ALMANAC_POOLS with the variable named', () => {
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'charge' })).toThrow(ConfigError);
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'charge=Bad Pool' })).toThrow(/ALMANAC_POOLS/);
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'a=x,a=y' })).toThrow(/twice/);
    expect(parsePoolMap({})).toEqual(new Map());
  });
});
