import { DEFAULT_SHARE, type TenantShare } from '@almanac/domain';
import type { TenantsRepository } from '@almanac/persistence';

/**
 * The tenants whose weight or limits differ from the default, as the dispatcher last read them
 * (observe(), once a second): an admin PATCH takes effect within about a second on every replica.
 * Everyone else is weight 1 with no limits, and costs no memory here.
 */
export class TenantShares {
  private shares = new Map<number, TenantShare>();

  constructor(private readonly tenants: Pick<TenantsRepository, 'listShares'>) {}

  of(tenantId: number): TenantShare {
    return this.shares.get(tenantId) ?? DEFAULT_SHARE;
  }

  async refresh(): Promise<void> {
    this.shares = await this.tenants.listShares();
  }
}
