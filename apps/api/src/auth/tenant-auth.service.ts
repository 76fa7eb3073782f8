import { TenantRecord, TenantsRepository } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { API_SETTINGS, ApiSettings } from '../api-settings';

/** Cached answers kept at most; past this the cache starts over (bad keys cannot grow it forever). */
const MAX_CACHED = 50_000;

/**
 * Resolves a bearer key to its tenant. Answers (including "no such key") are cached by the
 * key's sha256 for a short TTL, so authentication is not one database query per request;
 * a tenant's changed rate limit is seen within the TTL.
 */
@Injectable()
export class TenantAuthService {
  private readonly cache = new Map<string, { tenant: TenantRecord | null; until: number }>();

  constructor(
    private readonly tenants: TenantsRepository,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
  ) {}

  async authenticate(apiKey: string): Promise<TenantRecord | null> {
    const now = this.clock.now().getTime();
    const id = createHash('sha256').update(apiKey, 'utf8').digest('base64');
    const hit = this.cache.get(id);
    if (hit && hit.until > now) return hit.tenant;
    const tenant = await this.tenants.findByApiKey(apiKey);
    if (this.settings.authCacheTtlMs > 0) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(id, { tenant, until: now + this.settings.authCacheTtlMs });
    }
    return tenant;
  }
}
