import { instantOfWall, ZoneOffsets, validateTimezone } from './time-zone';
import { InvalidTimezoneError } from './errors';

const HOUR = 3_600_000;
const ms = (s: string) => Date.parse(s);

/** Reference offset straight from Intl, independent of ZoneOffsets' tables. */
const formats = new Map<string, Intl.DateTimeFormat>();
function intlOffset(zone: string, t: number): number {
  const format =
    formats.get(zone) ??
    new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
    });
  formats.set(zone, format);
  const parts = format.formatToParts(t);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const whole = Math.floor(t / 1000) * 1000;
  return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second')) - whole;
}

describe('validateTimezone', () => {
  it('returns the canonical name', () => {
    expect(validateTimezone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(validateTimezone('europe/berlin')).toBe('Europe/Berlin');
    expect(validateTimezone('UTC')).toBe('UTC');
  });

  it('names the field it is given', () => {
    expect(() => validateTimezone('Nope/Zone', 'schedule.timezone')).toThrow(/^schedule\.timezone is not a known IANA time zone/);
    try {
      validateTimezone(42);
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidTimezoneError);
      expect(e).toMatchObject({ field: 'timezone', rule: 'type' });
    }
  });

  it('rejects names longer than any real zone', () => {
    expect(() => validateTimezone(`Europe/${'x'.repeat(60)}`)).toThrow(InvalidTimezoneError);
  });
});

describe('ZoneOffsets', () => {
  const berlin = ZoneOffsets.for('Europe/Berlin');

  it('is one shared instance per zone', () => {
    expect(ZoneOffsets.for('Europe/Berlin')).toBe(berlin);
  });

  it('switches offset exactly at the transition instant (± 1 ms)', () => {
    expect(berlin.offsetAt(ms('2026-03-29T00:59:59.999Z'))).toBe(1 * HOUR);
    expect(berlin.offsetAt(ms('2026-03-29T01:00:00.000Z'))).toBe(2 * HOUR);
    expect(berlin.offsetAt(ms('2026-10-25T00:59:59.999Z'))).toBe(2 * HOUR);
    expect(berlin.offsetAt(ms('2026-10-25T01:00:00.000Z'))).toBe(1 * HOUR);
    const lordHowe = ZoneOffsets.for('Australia/Lord_Howe');
    expect(lordHowe.offsetAt(ms('2026-10-03T15:29:59.999Z'))).toBe(10.5 * HOUR);
    expect(lordHowe.offsetAt(ms('2026-10-03T15:30:00.000Z'))).toBe(11 * HOUR);
  });

  it('agrees with Intl at thousands of instants in zones with and without DST', () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/Sao_Paulo', 'UTC']) {
      const z = ZoneOffsets.for(zone);
      for (let i = 0; i < 300; i++) {
        const t = ms('2024-01-01T00:00:00Z') + Math.floor(random() * 4 * 365 * 24 * HOUR);
        expect([zone, new Date(t).toISOString(), z.offsetAt(t)]).toEqual([zone, new Date(t).toISOString(), intlOffset(zone, t)]);
      }
    }
  });

  it('maps a wall-clock time to none, one or two instants', () => {
    const wall = (s: string) => ms(`${s}Z`); // local fields written as if UTC
    expect(berlin.instantsOf(wall('2026-03-29T02:30:00'))).toEqual([]);
    expect(berlin.instantsOf(wall('2026-03-29T03:00:00'))).toEqual([ms('2026-03-29T01:00:00Z')]);
    expect(berlin.instantsOf(wall('2026-10-25T02:30:00'))).toEqual([ms('2026-10-25T00:30:00Z'), ms('2026-10-25T01:30:00Z')]);
    expect(berlin.instantsOf(wall('2026-11-30T10:00:00'))).toEqual([ms('2026-11-30T09:00:00Z')]);
    expect(berlin.firstInstantOf(wall('2026-03-29T02:30:00'))).toBeNull();
    expect(berlin.firstInstantOf(wall('2026-10-25T02:30:00'))).toBe(ms('2026-10-25T00:30:00Z'));
    expect(berlin.wallOf(ms('2026-10-25T01:30:00Z'))).toBe(wall('2026-10-25T02:30:00'));
  });

  it('round-trips every 5 minutes of a year: wallOf then firstInstantOf is the identity except in a repeat', () => {
    const ny = ZoneOffsets.for('America/New_York');
    let repeats = 0;
    for (let t = ms('2026-01-01T00:00:00Z'); t < ms('2027-01-01T00:00:00Z'); t += 5 * 60_000) {
      const back = ny.firstInstantOf(ny.wallOf(t));
      if (back !== t) {
        repeats++;
        expect(back).toBe(t - HOUR); // the second 01:xx maps to the first
      }
    }
    expect(repeats).toBe(12);
  });
});

describe('instantOfWall', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  it('reads a local wall time in its zone: the first instant of an overlap, just before the jump of a gap', () => {
    expect(iso(instantOfWall('Europe/Berlin', Date.UTC(2026, 10, 11, 2, 0)))).toBe('2026-11-11T01:00:00.000Z');
    // 2026-10-25 02:30 happens twice in Berlin (CEST, then CET): the first, when runs fire.
    expect(iso(instantOfWall('Europe/Berlin', Date.UTC(2026, 9, 25, 2, 30)))).toBe('2026-10-25T00:30:00.000Z');
    // 2026-03-29 02:30 never happens (02:00 CET → 03:00 CEST, at 01:00Z). Read with CET it was
    // 03:30 CEST, and a window from it left out the runs at 03:00 and 03:15.
    expect(iso(instantOfWall('Europe/Berlin', Date.UTC(2026, 2, 29, 2, 30)))).toBe('2026-03-29T00:59:59.999Z');
    // With milliseconds, still just before the jump (review: 02:30:00.500 gave 01:00:00.499Z).
    expect(iso(instantOfWall('Europe/Berlin', Date.UTC(2026, 2, 29, 2, 30, 0, 500)))).toBe('2026-03-29T00:59:59.999Z');
    // Lord Howe moves by half an hour (02:00 → 02:30 on 2026-10-04, at 15:30Z the day before).
    expect(iso(instantOfWall('Australia/Lord_Howe', Date.UTC(2026, 9, 4, 2, 15)))).toBe('2026-10-03T15:29:59.999Z');
  });
});
