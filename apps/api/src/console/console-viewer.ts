import type { TenantRecord } from '@almanac/persistence';

/**
 * Who is looking: a tenant (signed in with one of its API keys) sees only itself; the operator
 * (signed in with the admin token) sees the tenant list and any one tenant, named by `?tenant=`.
 */
export type ConsoleViewer =
  | { role: 'tenant'; tenant: TenantRecord }
  | { role: 'admin'; tenant: TenantRecord | null };

/** A viewer whose tenant is known: every job and schedule page needs one. */
export type TenantViewer = ConsoleViewer & { tenant: TenantRecord };

export const CONSOLE_PATH = '/console';

/** A path the console serves (a routed path: decoded, no query). */
export function isConsolePath(path: string): boolean {
  return path === CONSOLE_PATH || path.startsWith(`${CONSOLE_PATH}/`);
}

/**
 * A console URL. The operator's tenant rides along as `tenant=` so a link or a bookmark names
 * what it shows; a tenant's own pages need no such parameter (its key decides).
 */
export function consoleHref(viewer: ConsoleViewer, path: string, params: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  if (viewer.role === 'admin' && viewer.tenant) q.set('tenant', String(viewer.tenant.id));
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const query = q.toString();
  return `${CONSOLE_PATH}${path}${query ? `?${query}` : ''}`;
}
