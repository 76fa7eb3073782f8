import { ConfigError } from '@almanac/platform';
import { KindRoutes, parsePoolMap } from './kind-routes';

describe('kind routes', () => {
  it('routes by ALMANAC_POOLS, then the pool the handler declared, then default', () => {
    const routes = new KindRoutes(parsePoolMap({ ALMANAC_POOLS: 'charge=billing, http=io' }), new Map([['report', 'reports'], ['http', 'web']]));
    expect(['charge', 'http', 'report', 'noop', 'unknown'].map((k) => routes.pool(k))).toEqual(['billing', 'io', 'reports', 'default', 'default']);
    expect(routes.configuredPools()).toEqual(['billing', 'default', 'io', 'reports', 'web']);
    routes.setDeclared(new Map());
    expect(routes.pool('report')).toBe('default');
  });

  it('rejects a malformed ALMANAC_POOLS with the variable named', () => {
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'charge' })).toThrow(ConfigError);
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'charge=Bad Pool' })).toThrow(/ALMANAC_POOLS/);
    expect(() => parsePoolMap({ ALMANAC_POOLS: 'a=x,a=y' })).toThrow(/twice/);
    expect(parsePoolMap({})).toEqual(new Map());
  });
});
