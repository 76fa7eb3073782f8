import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { TAKE_BULK_STEP_LOCK } from './apply-bulk-chunk.sql';

describe("a bulk operation's step lock", () => {
  let db: TestDatabase;
  const holder = () => new Client({ connectionString: db.url });

  beforeAll(async () => {
    db = await createTestDatabase(1);
  });
  afterAll(async () => db.drop());

  it("is the operation's own: two operations whose ids are equal in their low 31 bits do not share it", async () => {
    const a = 120_594_121_214_941n; // an id as almanac_job_id() makes them (ms << 12 | 12 bits)
    const b = a + 2n ** 31n; // made 2^19 ms (~9 min) later, the same low bits
    const [one, two] = [holder(), holder()];
    await one.connect();
    await two.connect();
    try {
      await one.query('BEGIN');
      const take = async (c: Client, id: bigint) => (await c.query<{ ok: boolean }>(`SELECT ${TAKE_BULK_STEP_LOCK} AS ok`, [id.toString()])).rows[0].ok;
      expect(await take(one, a)).toBe(true);
      expect(await take(two, a)).toBe(false); // held: another replica skips it
      expect(await take(two, b)).toBe(true); // with the id mod 2^31, b was skipped while a was matched
      await one.query('ROLLBACK');
    } finally {
      await one.end();
      await two.end();
    }
  });
});
