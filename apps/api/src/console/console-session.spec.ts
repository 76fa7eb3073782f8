import { ManualClock, type AlmanacConfig } from '@almanac/platform';
import type { TenantsRepository } from '@almanac/persistence';
import type { FastifyRequest } from 'fastify';
import { loadApiSettings } from '../api-settings';
import { ADMIN_FAILURES, AdminAttempts, AdminAuthGuard } from '../auth/guards';
import type { TenantAuthService } from '../auth/tenant-auth.service';
import { ConsoleSession } from './console-session';

/** An admin token of the shape tenant keys have, so each sign-in waits for the key lookup. */
const TOKEN = `alm_${'a'.repeat(43)}`;

describe('the console sign-in', () => {
  it('counts sign-ins sent together before it compares the next with the admin token: one address cannot have more compared than its attempts', async () => {
    let lookupsDone!: () => void;
    const lookups = new Promise<void>((resolve) => (lookupsDone = resolve)); // every lookup answers at once, no tenant
    const auth = { authenticate: () => lookups.then(() => null) } as unknown as TenantAuthService;
    const admin = new AdminAuthGuard({ adminToken: TOKEN } as AlmanacConfig, new ManualClock(0), new AdminAttempts());
    const session = new ConsoleSession(auth, admin, {} as TenantsRepository, { adminPort: undefined } as AlmanacConfig, loadApiSettings({}));
    const req = { ip: '203.0.113.7', headers: {} } as unknown as FastifyRequest;
    const guesses = Array.from({ length: ADMIN_FAILURES * 3 }, (_, i) => session.resolve(`alm_${String(i).padStart(43, 'b')}`, req));
    const right = session.resolve(TOKEN, req); // sent with them, last
    lookupsDone();
    expect(await right).toBe('locked'); // compared before the lookup's wait, it signed in
    expect((await Promise.all(guesses)).filter((g) => g === 'locked')).toHaveLength(ADMIN_FAILURES * 2);
  });
});
