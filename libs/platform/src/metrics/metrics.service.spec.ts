import { MetricsService, MetricTypeError } from './metrics.service';

describe('MetricsService', () => {
  it('collects default process metrics in its own registry', async () => {
    const text = await new MetricsService().registry.metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('returns the same metric when asked twice by name', async () => {
    const m = new MetricsService();
    const a = m.counter({ name: 'almanac_test_total', help: 'h', labelNames: ['tier'] as const });
    const b = m.counter({ name: 'almanac_test_total', help: 'h', labelNames: ['tier'] as const });
    expect(b).toBe(a);
    a.inc({ tier: 'hot' });
    b.inc({ tier: 'hot' }, 2);
    expect(await m.registry.getSingleMetricAsString('almanac_test_total')).toContain('almanac_test_total{tier="hot"} 3');
  });

  it('refuses a name already used by another metric type', () => {
    const m = new MetricsService();
    m.gauge({ name: 'almanac_thing', help: 'h' });
    expect(() => m.counter({ name: 'almanac_thing', help: 'h' })).toThrow(MetricTypeError);
  });

  it('fills collect-on-scrape gauges and histograms with buckets', async () => {
    const m = new MetricsService();
    m.gauge({ name: 'almanac_rows', help: 'h', labelNames: ['state'] as const, collect: (g) => g.set({ state: 'queued' }, 42) });
    m.histogram({ name: 'almanac_lag_seconds', help: 'h', buckets: [0.1, 1] }).observe(0.5);
    const text = await m.registry.metrics();
    expect(text).toContain('almanac_rows{state="queued"} 42');
    expect(text).toContain('almanac_lag_seconds_bucket{le="1"} 1');
  });

  it('keeps registries apart between instances (two apps in one test process)', () => {
    const a = new MetricsService();
    const b = new MetricsService();
    a.counter({ name: 'almanac_only_a_total', help: 'h' });
    expect(b.registry.getSingleMetric('almanac_only_a_total')).toBeUndefined();
  });
});
