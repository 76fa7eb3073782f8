import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { EffectsRepository } from './effects.repository';

describe('EffectsRepository (Postgres)', () => {
  let db: TestDatabase;
  let effects: EffectsRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    effects = new EffectsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  it('lets one claim win among many at once; the others see it busy', async () => {
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => effects.claim(1, 'race', String(100 + i), 60_000)));
    expect(claims.filter((c) => c.state === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.state === 'busy')).toHaveLength(7);
  });

  it('keys effects per tenant', async () => {
    expect((await effects.claim(1, 'same-key', '1', 60_000)).state).toBe('claimed');
    expect((await effects.claim(2, 'same-key', '2', 60_000)).state).toBe('claimed');
  });

  it('hands a stale claim to the next run; the slow run that held it still records its call, and nobody calls again', async () => {
    const first = await effects.claim(1, 'slow', '10', 60_000);
    expect(first.state).toBe('claimed');
    await db.dataSource.query(`UPDATE job_effects SET claimed_at = claimed_at - interval '2 minutes' WHERE effect_key = 'slow'`);
    const second = await effects.claim(1, 'slow', '11', 60_000);
    expect(second.state).toBe('claimed');
    // The first run's release (its call failed after all) cannot drop the second run's claim.
    if (first.state === 'claimed') await effects.release(1, 'slow', '10', first.token);
    expect((await effects.claim(1, 'slow', '12', 60_000)).state).toBe('busy');
    // The first run's call did land: it records it, and that record stands.
    await effects.finish(1, 'slow', '10', { sent: 'by the slow run' });
    await effects.finish(1, 'slow', '11', { sent: 'by the second run' });
    expect(await effects.claim(1, 'slow', '13', 60_000)).toEqual({ state: 'done', result: { sent: 'by the slow run' } });
  });

  it('gives a released claim back: the retry calls again', async () => {
    const claim = await effects.claim(1, 'failed-call', '20', 60_000);
    if (claim.state !== 'claimed') throw new Error('expected a claim');
    await effects.release(1, 'failed-call', '20', claim.token);
    expect((await effects.claim(1, 'failed-call', '21', 60_000)).state).toBe('claimed');
  });
});
