import { KindsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { registerBuiltInKinds } from '@almanac/testing/built-in-kinds';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import type { PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { Writable } from 'node:stream';
import { loadApiSettings } from '../api-settings';
import { KindsService } from './kinds.service';

describe('KindsService with ALMANAC_KINDS (Postgres)', () => {
  let db: TestDatabase;
  beforeAll(async () => (db = await createTestDatabase(2)));
  afterAll(() => db.drop());

  /** The API's kind copy admitting `kinds`, and the lines its log received. */
  function service(kinds: string[]) {
    const lines: { msg: string; entry?: string }[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
    const svc = new KindsService(new KindsRepository(db.dataSource), new ManualClock(), loadApiSettings({ ALMANAC_KINDS: kinds.join(',') }));
    Object.assign(svc, { log: pino(stream) as unknown as PinoLogger });
    return { svc, lines };
  }

  it('a typo admitting no registered kind is logged once per entry, and its 503 says so', async () => {
    const registered = (await registerBuiltInKinds(db.dataSource)).length;
    const { svc, lines } = service(['nop', 'http', 'chrage']);
    await svc.lookup([{ kind: 'http' }]);
    await svc.catalog.refresh(Date.now());
    expect(lines.map((l) => [l.entry, l.msg])).toEqual([
      ['nop', 'ALMANAC_KINDS names "nop", which no worker has registered'],
      ['chrage', 'ALMANAC_KINDS names "chrage", which no worker has registered'],
    ]);

    const typo = service(['nop']);
    await expect(typo.svc.lookup([{ kind: 'noop' }])).rejects.toMatchObject({
      status: 503,
      message: `ALMANAC_KINDS admits none of the ${registered} registered kinds`,
    });
  });
});
