import { workerSettingsFromEnv } from './worker-settings';

describe('workerSettingsFromEnv: what a pool tells its autoscaling', () => {
  it('assumes handlers of about a second until measured: the default throughput is the concurrency', () => {
    expect(workerSettingsFromEnv({ ALMANAC_WORKER_CONCURRENCY: '50' }).scaling).toEqual({ defaultThroughput: 50, maxReplicas: 20 });
  });

  it('takes the default throughput and the ceiling from the environment', () => {
    const env = { ALMANAC_WORKER_DEFAULT_THROUGHPUT: '0.083', ALMANAC_WORKER_MAX_REPLICAS: '40' };
    expect(workerSettingsFromEnv(env).scaling).toEqual({ defaultThroughput: 0.083, maxReplicas: 40 });
  });

  it('refuses a bad value by its variable name', () => {
    expect(() => workerSettingsFromEnv({ ALMANAC_WORKER_MAX_REPLICAS: '0' })).toThrow(/ALMANAC_WORKER_MAX_REPLICAS/);
    expect(() => workerSettingsFromEnv({ ALMANAC_WORKER_DEFAULT_THROUGHPUT: 'fast' })).toThrow(/ALMANAC_WORKER_DEFAULT_THROUGHPUT/);
  });
});
