import { MetricsService } from './metrics.service';
import { setAsideCounter } from './set-aside';

describe('setAsideCounter', () => {
  it('exports every statement at 0 from the start, so the first set-aside after a start raises increase()', async () => {
    const metrics = new MetricsService();
    setAsideCounter(metrics);
    const text = await metrics.registry.getSingleMetricAsString('almanac_set_aside_total');
    for (const statement of ['completion', 'claim', 'promotion', 'retention', 'recurring', 'bulk_match', 'bulk_apply']) {
      expect(text).toContain(`almanac_set_aside_total{statement="${statement}"} 0`);
    }
  });

  it('keeps counts when a second role asks for it in the same process', async () => {
    const metrics = new MetricsService();
    setAsideCounter(metrics).inc({ statement: 'claim' });
    setAsideCounter(metrics);
    expect(await metrics.registry.getSingleMetricAsString('almanac_set_aside_total')).toContain('almanac_set_aside_total{statement="claim"} 1');
  });
});
