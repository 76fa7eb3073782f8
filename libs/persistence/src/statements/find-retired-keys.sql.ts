/**
 * Which of a tenant's keys name jobs removed by retention, with the day and the state they had.
 * Only asked about keys an insert neither created nor found, so it costs nothing on the way in.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_RETIRED_KEYS_SQL = `
SELECT DISTINCT ON (k.key) k.key, r.removed_on::text AS removed_on, r.state
  FROM unnest($2::text[]) AS k(key)
  JOIN retired_keys r ON r.key_hash = hashtextextended(k.key, $1::int)
 ORDER BY k.key, r.removed_on DESC`;
