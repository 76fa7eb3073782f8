import { ManualClock } from './clock';
import { DatabaseClock } from './database-clock';

describe('DatabaseClock', () => {
  it('reads the local clock until it has seen the database', () => {
    const local = new ManualClock(1_000_000);
    expect(new DatabaseClock(local).now().getTime()).toBe(1_000_000);
  });

  it('follows a database 5 s ahead to within the round trip that read it', () => {
    const local = new ManualClock(1_000_000); // 5 s behind the database
    const time = new DatabaseClock(local);
    const sent = local.now().getTime();
    local.advance(20);
    time.observe(1_005_010, sent); // read 10 ms into the trip: the offset is 4,990 to 5,010
    expect(time.skewMs).toBe(4990);
    local.advance(1000);
    expect(time.now().getTime()).toBe(1_006_010);
    const again = local.now().getTime();
    time.observe(again - 2000, again); // and 2 s behind it, read at once
    expect(time.skewMs).toBe(-2000);
  });

  it('reads no offset from a round trip that a clock in step explains, however lopsided', () => {
    const local = new ManualClock(1_000_000);
    const time = new DatabaseClock(local);
    const sent = local.now().getTime();
    local.advance(150); // the database read its clock 1 ms in; the answer waited on a busy event loop
    time.observe(1_000_001, sent);
    expect(time.skewMs).toBe(0); // the middle of the trip said -74 ms
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
