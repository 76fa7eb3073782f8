/** The largest value of a Postgres `integer` identity (tenants, keys, secrets). */
const MAX_SERIAL = 2147483647;

/**
 * Whether `id` can name a row of an `integer` identity column: anything else finds nothing, and
 * never reaches the database (where it would be an out-of-range error, a 500).
 */
export function isSerialId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= MAX_SERIAL;
}
