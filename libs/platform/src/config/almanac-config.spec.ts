import { ConfigError } from '@almanac/config';
import { configWarnings, describeConfig, DEV_ADMIN_TOKEN, loadConfig } from './almanac-config';

describe('loadConfig', () => {
  it('has working local defaults', () => {
    const c = loadConfig({});
    expect(c).toEqual({
      production: false,
      port: 3000,
      adminPort: undefined,
      metricsPort: undefined,
      database: {
        url: 'postgres://postgres@127.0.0.1:5432/almanac', poolSize: 10,
        statementTimeoutMs: 30_000, lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 600_000, acquireTimeoutMs: 5_000,
      },
      redisUrl: 'redis://127.0.0.1:6379',
      redisClusterNodes: null,
      redisCommandTimeoutMs: 5000,
      adminToken: DEV_ADMIN_TOKEN,
      adminTokenIsDefault: true,
      logLevel: 'info',
      logFormat: 'json', // jest's workers write to a pipe, not a terminal
      queuePrefix: 'almanac',
      horizons: { immediateMs: 15 * 60_000, hotMs: 24 * 3600_000 },
      maxBodyBytes: 4 * 1024 * 1024,
      httpRequestTimeoutMs: 30_000,
      trustProxy: [],
    });
    expect(configWarnings(c)).toEqual([expect.stringContaining('ALMANAC_ADMIN_TOKEN is unset')]);
  });

  it('reads every core setting', () => {
    const c = loadConfig({
      NODE_ENV: 'production',
      PORT: '8080',
      DATABASE_URL: 'postgresql://u:p@db:5432/prod',
      ALMANAC_DB_POOL_SIZE: '20',
      REDIS_URL: 'rediss://:pw@cache:6380/2',
      ALMANAC_ADMIN_TOKEN: 'a-long-enough-admin-token',
      ALMANAC_LOG_LEVEL: 'warn',
      ALMANAC_QUEUE_PREFIX: 'almanac-prod',
      ALMANAC_IMMEDIATE_HORIZON_MS: '60000',
      ALMANAC_HOT_HORIZON_MS: '3600000',
      ALMANAC_MAX_BODY_BYTES: '2048',
      ALMANAC_HTTP_REQUEST_TIMEOUT_MS: '5000',
      ALMANAC_ADMIN_PORT: '8081',
      ALMANAC_METRICS_PORT: '9090',
      ALMANAC_REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.7:7001',
    });
    expect(c).toMatchObject({
      production: true,
      port: 8080,
      adminPort: 8081,
      metricsPort: 9090,
      database: { url: 'postgresql://u:p@db:5432/prod', poolSize: 20 },
      redisUrl: 'rediss://:pw@cache:6380/2',
      redisClusterNodes: [{ host: 'redis-0.redis', port: 6379 }, { host: '10.0.0.7', port: 7001 }],
      adminToken: 'a-long-enough-admin-token',
      adminTokenIsDefault: false,
      logLevel: 'warn',
      queuePrefix: 'almanac-prod',
      horizons: { immediateMs: 60000, hotMs: 3600000 },
      maxBodyBytes: 2048,
      httpRequestTimeoutMs: 5000,
    });
    expect(configWarnings(c)).toEqual([]);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT must be an integer from 1 to 65535 (got "abc")'],
    [{ PORT: '70000' }, 'PORT must be an integer from 1 to 65535 (got "70000")'],
    [{ PORT: '0' }, 'PORT must be an integer from 1 to 65535 (got "0")'],
    [{ ALMANAC_ADMIN_PORT: 'admin' }, 'ALMANAC_ADMIN_PORT must be an integer from 1 to 65535 (got "admin")'],
    [{ ALMANAC_METRICS_PORT: '65536' }, 'ALMANAC_METRICS_PORT must be an integer from 1 to 65535 (got "65536")'],
    [{ ALMANAC_ADMIN_PORT: '3000' }, 'ALMANAC_ADMIN_PORT must differ from PORT (both 3000)'],
    [{ PORT: '8080', ALMANAC_METRICS_PORT: '8080' }, 'ALMANAC_METRICS_PORT must differ from PORT (both 8080)'],
    [{ ALMANAC_ADMIN_PORT: '9090', ALMANAC_METRICS_PORT: '9090' }, 'ALMANAC_METRICS_PORT must differ from ALMANAC_ADMIN_PORT (both 9090)'],
    [{ REDIS_URL: 'http://cache:6379' }, 'REDIS_URL must start with redis:// or rediss:// (got http://)'],
    [{ DATABASE_URL: 'mysql://db/x' }, 'DATABASE_URL must start with postgres://'],
    [{ ALMANAC_LOG_LEVEL: 'verbose' }, 'ALMANAC_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (got "verbose")'],
    [{ ALMANAC_REDIS_CLUSTER_NODES: 'redis-0' }, 'ALMANAC_REDIS_CLUSTER_NODES must be host:port (got "redis-0")'],
    [{ ALMANAC_REDIS_CLUSTER_NODES: 'a:6379,b:70000' }, 'ALMANAC_REDIS_CLUSTER_NODES: port out of range in "b:70000"'],
    [{ ALMANAC_QUEUE_PREFIX: 'a:b' }, 'ALMANAC_QUEUE_PREFIX must be 1-64 letters, digits, "_", "." or "-" (got "a:b")'],
    [{ ALMANAC_HOT_HORIZON_MS: 'soon' }, 'ALMANAC_HOT_HORIZON_MS must be an integer'],
    [{ ALMANAC_IMMEDIATE_HORIZON_MS: '-1' }, 'ALMANAC_IMMEDIATE_HORIZON_MS must be an integer from 0'],
    [
      { ALMANAC_IMMEDIATE_HORIZON_MS: '7200000', ALMANAC_HOT_HORIZON_MS: '3600000' },
      'ALMANAC_IMMEDIATE_HORIZON_MS (7200000) must not exceed ALMANAC_HOT_HORIZON_MS (3600000)',
    ],
    [{ NODE_ENV: 'production' }, 'ALMANAC_ADMIN_TOKEN is required when NODE_ENV=production'],
    [{ NODE_ENV: 'production', ALMANAC_ADMIN_TOKEN: 'short' }, 'ALMANAC_ADMIN_TOKEN must be at least 16 characters'],
  ])('rejects %p', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('logs readable lines on a terminal and JSON elsewhere, unless ALMANAC_LOG_FORMAT says which', () => {
    expect(loadConfig({}, true).logFormat).toBe('pretty');
    expect(loadConfig({}, false).logFormat).toBe('json');
    expect(loadConfig({ ALMANAC_LOG_FORMAT: 'json' }, true).logFormat).toBe('json');
    expect(loadConfig({ ALMANAC_LOG_FORMAT: 'pretty' }, false).logFormat).toBe('pretty');
    expect(() => loadConfig({ ALMANAC_LOG_FORMAT: 'xml' })).toThrow('ALMANAC_LOG_FORMAT must be one of auto, json, pretty (got "xml")');
  });

  it('leaves the admin and metrics ports unset when their variables are empty', () => {
    expect(loadConfig({ ALMANAC_ADMIN_PORT: '', ALMANAC_METRICS_PORT: ' ' })).toMatchObject({ adminPort: undefined, metricsPort: undefined });
  });

  it('allows the immediate and hot horizons to be equal (no hot tier)', () => {
    expect(loadConfig({ ALMANAC_IMMEDIATE_HORIZON_MS: '60000', ALMANAC_HOT_HORIZON_MS: '60000' }).horizons)
      .toEqual({ immediateMs: 60000, hotMs: 60000 });
  });

  it('never puts the admin token or passwords in what it logs', () => {
    const c = loadConfig({
      ALMANAC_ADMIN_TOKEN: 'super-secret-admin-token',
      DATABASE_URL: 'postgres://u:dbpass@db/x',
      REDIS_URL: 'redis://:redispass@cache:6379',
    });
    const text = JSON.stringify(describeConfig(c)) + configWarnings(c).join();
    expect(text).not.toMatch(/super-secret|dbpass|redispass/);
    expect(describeConfig(c)).toMatchObject({ databaseUrl: 'postgres://u:***@db/x', port: 3000 });
  });
});
