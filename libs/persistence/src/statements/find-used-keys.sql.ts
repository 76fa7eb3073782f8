import { RESERVED_NOW } from './find-retired-keys.sql';

/**
 * Which of a tenant's keys it has used: a stored job's, or one retention removed and keeps
 * reserved. Keys only (a quota refusal's check on a batch of replays must not read their payloads).
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_USED_KEYS_SQL = `
SELECT j.key FROM jobs j WHERE j.tenant_id = $1 AND j.key = ANY ($2::text[])
UNION ALL
SELECT r.key FROM retired_keys r WHERE r.tenant_id = $1 AND r.key = ANY ($2::text[]) AND ${RESERVED_NOW}`;
