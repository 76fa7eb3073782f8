import { MetricsService } from '@almanac/platform';
import { SweepMetrics } from './sweep-metrics';

describe('SweepMetrics', () => {
  it('exports the series alerts take increase() of at 0 from construction', async () => {
    const metrics = new MetricsService();
    new SweepMetrics(metrics);
    const runs = await metrics.registry.getSingleMetricAsString('almanac_schedule_runs_total');
    for (const outcome of ['ok', 'late', 'missed', 'failed']) expect(runs).toContain(`almanac_schedule_runs_total{outcome="${outcome}"} 0`);
    const setAside = await metrics.registry.getSingleMetricAsString('almanac_set_aside_total');
    for (const statement of ['promotion', 'retention', 'recurring', 'bulk_match', 'bulk_apply']) {
      expect(setAside).toContain(`almanac_set_aside_total{statement="${statement}"} 0`);
    }
  });
});
