import { ConfigError } from '@almanac/config';
import { passwordOfUrl } from '@almanac/persistence';

/**
 * Secrets that appear in this repository (docker-compose, the example Kubernetes secret, the
 * development default, the test suite): anyone can read them, so a production process must not
 * run with one. `published-secrets.spec.ts` scans the repository for admin tokens and URL
 * passwords and fails when one is missing here.
 */
export const PUBLISHED_ADMIN_TOKENS: readonly string[] = [
  'almanac-dev-admin-token',
  'change-me-local-admin-token',
  'example-admin-token-replace-me',
  'test-admin-token-0123456789',
];

/** Passwords in the repository's connection URLs and compose file. */
export const PUBLISHED_PASSWORDS: readonly string[] = ['almanac', 'example-not-a-password', 'postgres'];

/**
 * With NODE_ENV=production: refuses an admin token or a Postgres/Redis password published in the
 * repository, naming the variable (never the value's owner: the value itself is public).
 */
export function refusePublishedSecrets(env: NodeJS.ProcessEnv, adminToken: string): void {
  if (PUBLISHED_ADMIN_TOKENS.includes(adminToken)) {
    throw new ConfigError('ALMANAC_ADMIN_TOKEN is a value published in the Almanac repository; set a secret of your own when NODE_ENV=production');
  }
  for (const name of ['DATABASE_URL', 'REDIS_URL'] as const) {
    const password = passwordOfUrl(env[name]);
    if (password !== undefined && PUBLISHED_PASSWORDS.includes(password)) {
      throw new ConfigError(`${name} uses a password published in the Almanac repository; set a password of your own when NODE_ENV=production`);
    }
  }
}
