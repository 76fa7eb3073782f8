import { readSetting } from '../read-setting';

describe('promoter settings', () => {
  // The AlmanacPromotionSweepNotRunning alert pages after 3 h without a successful run: an
  // interval above an hour (24 h was accepted) made it fire on a healthy promoter.
  it('refuses a promotion interval above an hour, naming the variable', () => {
    expect(readSetting({ ALMANAC_PROMOTION_INTERVAL_MS: '3600000' }, 'ALMANAC_PROMOTION_INTERVAL_MS')).toBe(3_600_000);
    expect(() => readSetting({ ALMANAC_PROMOTION_INTERVAL_MS: '7200000' }, 'ALMANAC_PROMOTION_INTERVAL_MS')).toThrow(
      'ALMANAC_PROMOTION_INTERVAL_MS must be an integer from 100 to 3600000 ms (got "7200000")',
    );
  });
});
