import type { TenantRecord, TenantsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { loadApiSettings } from '../api-settings';
import { TenantAuthService } from './tenant-auth.service';

describe('TenantAuthService', () => {
  const tenant: TenantRecord = { id: 7, name: 'acme', createdAt: new Date(0), rateLimitPerSecond: null };

  it('asks the database once per key per TTL, for known and unknown keys alike', async () => {
    const lookups: string[] = [];
    const repo = {
      findByApiKey: async (key: string) => {
        lookups.push(key);
        return key === 'alm_good' ? tenant : null;
      },
    } as unknown as TenantsRepository;
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '10000' }), clock);
    for (let i = 0; i < 5; i++) {
      expect(await auth.authenticate('alm_good')).toBe(tenant);
      expect(await auth.authenticate('alm_bad')).toBeNull();
    }
    expect(lookups).toEqual(['alm_good', 'alm_bad']);
    clock.advance(10_001);
    await auth.authenticate('alm_good');
    expect(lookups).toEqual(['alm_good', 'alm_bad', 'alm_good']);
  });
});
