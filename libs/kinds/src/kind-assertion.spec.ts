import { KindsRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import pino from 'pino';
import { Writable } from 'node:stream';
import { KIND_REREAD_EVERY_MS, KindAssertion } from './kind-assertion';

/** The real repository, counting its readings of the registry, and holding an assertion's answer back when asked to. */
class ReadCounting extends KindsRepository {
  reads = 0;
  private held?: { ran: () => void; until: Promise<void> };
  override standing(...args: Parameters<KindsRepository['standing']>): ReturnType<KindsRepository['standing']> {
    this.reads++;
    return super.standing(...args);
  }
  override async register(...args: Parameters<KindsRepository['register']>): ReturnType<KindsRepository['register']> {
    const answer = await super.register(...args);
    const held = this.held;
    held?.ran();
    await held?.until;
    return answer;
  }
  /** The next assertion's answer is handed back only on `release()`; `ran`: its statement has run. */
  holdNextAnswer(): { ran: Promise<void>; release: () => void } {
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    const ran = new Promise<void>((resolve) => (this.held = { ran: resolve, until }));
    return { ran: ran.then(() => void (this.held = undefined)), release };
  }
}

describe('KindAssertion (Postgres)', () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase()));
  afterAll(async () => db.drop());

  /** A worker build asserting `pool` for kind `report`, and the lines its log received. */
  function worker(pool: string, id: string) {
    const lines: { level: number; msg: string; kind: string; pool?: string; ownPool?: string }[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
    const registration = { kind: 'report', pool, timeoutMs: 1000, payloadSchema: null };
    const kinds = new ReadCounting(db.dataSource);
    return { assertion: new KindAssertion(kinds, [registration], id, pino(stream)), lines, kinds };
  }
  /** Time passes for the registry: every definition's times move `seconds` into the past. */
  const later = (seconds: number) =>
    db.dataSource.query(`UPDATE kind_definitions SET first_seen_at = first_seen_at - $1 * interval '1 second',
                                                     asserted_at = asserted_at - $1 * interval '1 second'`, [seconds]);

  it("says once that another live build's definition is in use, and when its own is again", async () => {
    const old = worker('default', 'w-old');
    const next = worker('reports', 'w-new');
    await old.assertion.runOnce();
    await later(10);
    await next.assertion.runOnce();
    expect(next.lines).toMatchObject([{ msg: 'kind moved to another pool by this registration', kind: 'report' }]);

    await old.assertion.runOnce();
    await old.assertion.runOnce(); // still superseded: not said again
    expect(old.lines).toEqual([expect.objectContaining({ level: 40, kind: 'report', pool: 'reports', ownPool: 'default' })]);
    expect(old.lines[0].msg).toMatch(/another live worker build defines this kind differently/);

    await later(100); // the new build stopped asserting: the old definition is the live one
    await old.assertion.runOnce();
    expect(old.lines.slice(1)).toMatchObject([
      { msg: 'kind moved to another pool by this registration', kind: 'report' },
      { level: 30, msg: "this worker's definition of the kind is in use again", kind: 'report' },
    ]);
  });

  describe('judging a payload its schema refused (keepRefused)', () => {
    beforeEach(() => db.dataSource.query(`TRUNCATE kind_definitions, job_kinds`));
    const before = () => new Date(Date.now() - 60_000); // a job made before any reading here
    const after = () => new Date(Date.now() + 60_000); // one made after every reading here

    it('discards once a reading made after the job finds its own definition in use; reads at most once a second per kind, keeping a job no reading covers', async () => {
      const old = worker('default', 'w-old');
      await old.assertion.runOnce();
      const t = 1_000_000;
      expect(await old.assertion.keepRefused('report', before(), t)).toBeUndefined();
      expect(await old.assertion.keepRefused('report', before(), t + 10)).toBeUndefined(); // covered by that reading
      expect(old.kinds.reads).toBe(1);
      expect(await old.assertion.keepRefused('report', after(), t + 20)).toMatch(/not read since the job was made/);
      expect(old.kinds.reads).toBe(1); // a flood of refusals is no flood of queries
      expect(await old.assertion.keepRefused('report', after(), t + KIND_REREAD_EVERY_MS)).toMatch(/not read since the job was made/);
      expect(old.kinds.reads).toBe(2);

      await later(10);
      await worker('reports', 'w-new').assertion.runOnce(); // a newer build's definition is in use
      expect(await old.assertion.keepRefused('report', new Date(), t + 3 * KIND_REREAD_EVERY_MS)).toMatch(/another live definition of the kind is in use/);
      expect(old.lines).toEqual([expect.objectContaining({ level: 40, kind: 'report', pool: 'reports', ownPool: 'default' })]);
      expect(await old.assertion.keepRefused('report', after(), t + 5 * KIND_REREAD_EVERY_MS)).toMatch(/another live definition/);
      expect(old.kinds.reads).toBe(3); // known superseded: not read again
      await old.assertion.runOnce();
      expect(old.lines).toHaveLength(1); // said once
    });

    it("judges a job by its covering reading's own verdict: an assertion answered after it, but read before the newer build asserted, does not let the job be discarded", async () => {
      const old = worker('default', 'w-old');
      await old.assertion.runOnce();
      await later(10);
      const answer = old.kinds.holdNextAnswer();
      const asserting = old.assertion.runOnce();
      await answer.ran; // read now: only this build's definition is in the registry
      await worker('reports', 'w-new').assertion.runOnce(); // a newer build's definition is in use
      const job = before();
      const t = 1_000_000;
      expect(await old.assertion.keepRefused('report', job, t)).toMatch(/another live definition/);
      answer.release();
      await asserting; // the older answer arrives: "in use again"
      expect(await old.assertion.keepRefused('report', job, t + 10)).toMatch(/another live definition/); // the covering reading found the newer one
      expect(old.kinds.reads).toBe(1);
      expect(await old.assertion.keepRefused('report', job, t + KIND_REREAD_EVERY_MS)).toMatch(/another live definition/); // read again: still the newer one
      expect(old.kinds.reads).toBe(2);

      await later(100); // the newer build is gone; this one's assertion makes its definition the one in use again
      await old.assertion.runOnce();
      expect(await old.assertion.keepRefused('report', job, t + 2 * KIND_REREAD_EVERY_MS)).toBeUndefined(); // read again, not kept for ever
      expect(old.kinds.reads).toBe(3);
    });

    it('reads again a second later by a monotonic clock, even if the wall clock was stepped back', async () => {
      const old = worker('default', 'w-old');
      await old.assertion.runOnce();
      const [made, wallNow, monotonicNow] = [after(), Date.now.bind(Date), performance.now.bind(performance)];
      let passedMs = 0;
      jest.spyOn(performance, 'now').mockImplementation(() => monotonicNow() + passedMs);
      try {
        expect(await old.assertion.keepRefused('report', made)).toMatch(/not read since the job was made/);
        jest.spyOn(Date, 'now').mockImplementation(() => wallNow() - 3_600_000); // NTP steps the clock an hour back
        passedMs = KIND_REREAD_EVERY_MS;
        await old.assertion.keepRefused('report', made);
        expect(old.kinds.reads).toBe(2);
      } finally {
        jest.restoreAllMocks();
      }
    });

    it('keeps the job when the registry cannot be read', async () => {
      const old = worker('default', 'w-old');
      await old.assertion.runOnce();
      await db.dataSource.query(`ALTER TABLE job_kinds RENAME TO job_kinds_away`);
      try {
        expect(await old.assertion.keepRefused('report', before(), 1_000_000)).toMatch(/could not be read/);
      } finally {
        await db.dataSource.query(`ALTER TABLE job_kinds_away RENAME TO job_kinds`);
      }
      expect(old.lines).toMatchObject([{ level: 40, kind: 'report', msg: expect.stringMatching(/could not read the kind registry/) }]);
      expect(await old.assertion.keepRefused('report', before(), 1_000_000 + KIND_REREAD_EVERY_MS)).toBeUndefined(); // read again a second later
    });
  });
});
