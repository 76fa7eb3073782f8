import { ManualClock } from './clock';
import { DatabaseClock } from './database-clock';

describe('DatabaseClock', () => {
  it('reads the local clock until it has seen the database', () => {
    const local = new ManualClock(1_000_000);
    expect(new DatabaseClock(local).now().getTime()).toBe(1_000_000);
  });

  it('follows the database by the middle of the round trip that read it', () => {
    const local = new ManualClock(1_000_000); // 5 s behind the database
    const time = new DatabaseClock(local);
    const sent = local.now().getTime();
    local.advance(20);
    time.observe(1_005_010, sent);
    expect(time.skewMs).toBe(5000);
    local.advance(1000);
    expect(time.now().getTime()).toBe(1_006_020);
  });

  it('ignores a reading from a slow round trip, whose middle says little', () => {
    const local = new ManualClock(1_000_000);
    const time = new DatabaseClock(local);
    const sent = local.now().getTime();
    local.advance(60_000); // a beat held up by a stalled database
    time.observe(1_060_000, sent);
    expect(time.skewMs).toBe(0);
  });
});
