import { InvalidTimezoneError, describeValue } from './errors';

/**
 * IANA time zones: validation, and fast UTC-offset arithmetic for schedules.
 *
 * Offsets come from Intl (the ICU tz database bundled with Node), but asking Intl costs
 * microseconds per call, so each zone learns its offset transitions once per 32-day bucket
 * (sampled every 6 hours, each change located to the second by bisection) and answers from that
 * table afterwards. Assumes a zone's offset does not change twice within 6 hours, true of every
 * zone in modern times.
 */

// Names like Europe/Berlin, America/Argentina/Buenos_Aires, UTC, Etc/GMT+5. Offsets (+01:00)
// are deliberately not zones: they have no daylight saving rules, so a schedule in one would
// silently drift from the local time its author meant.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

/** Validates an IANA zone name and returns its canonical spelling (`europe/berlin` → `Europe/Berlin`). */
export function validateTimezone(raw: unknown, field = 'timezone'): string {
  if (typeof raw !== 'string') {
    throw new InvalidTimezoneError(field, 'type', `${field} must be an IANA time zone name such as Europe/Berlin, got ${describeValue(raw)}`);
  }
  if (raw.length === 0 || raw.length > 64 || !ZONE_NAME.test(raw)) {
    throw new InvalidTimezoneError(field, 'format', `${field} must be an IANA time zone name such as Europe/Berlin, got ${describeValue(raw)}`);
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    throw new InvalidTimezoneError(field, 'unknown', `${field} is not a known IANA time zone: ${describeValue(raw)}`);
  }
}

const SECOND = 1000;
const HOUR = 3_600_000;
const SAMPLE_MS = 6 * HOUR;
const BUCKET_MS = 128 * SAMPLE_MS; // 32 days
const MAX_BUCKETS_PER_ZONE = 4096; // ~350 years of lookups before the cache starts over
// Every real offset lies within -12 h..+14 h, so the instants of one local wall-clock time lie
// within this distance of it.
const SPAN_MS = 15 * HOUR;

interface Bucket {
  /** offsets[i] applies from starts[i] (inclusive) to starts[i + 1]. starts[0] = bucket start. */
  readonly starts: number[];
  readonly offsets: number[];
}

export class ZoneOffsets {
  private readonly format: Intl.DateTimeFormat;
  private readonly buckets = new Map<number, Bucket>();

  private constructor(readonly zone: string) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  private static readonly zones = new Map<string, ZoneOffsets>();

  /** One shared instance per zone (the transition tables are worth keeping). */
  static for(zone: string): ZoneOffsets {
    let z = ZoneOffsets.zones.get(zone);
    if (!z) {
      z = new ZoneOffsets(zone);
      ZoneOffsets.zones.set(zone, z);
    }
    return z;
  }

  /** UTC offset (local − UTC) in ms at instant `t` (epoch ms). */
  offsetAt(t: number): number {
    const index = Math.floor(t / BUCKET_MS);
    let bucket = this.buckets.get(index);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS_PER_ZONE) this.buckets.clear();
      bucket = this.learn(index * BUCKET_MS);
      this.buckets.set(index, bucket);
    }
    const { starts, offsets } = bucket;
    let i = starts.length - 1;
    while (i > 0 && t < starts[i]) i--;
    return offsets[i];
  }

  /** The local wall-clock time of instant `t`, as epoch ms of the same fields read as UTC. */
  wallOf(t: number): number {
    return t + this.offsetAt(t);
  }

  /**
   * The instants at which the local wall-clock time `wall` occurs, earliest first: none in a
   * spring-forward gap, two in a fall-back overlap, otherwise one.
   */
  instantsOf(wall: number): number[] {
    const early = this.offsetAt(wall - SPAN_MS);
    const late = this.offsetAt(wall + SPAN_MS);
    const out: number[] = [];
    // A larger offset means an earlier instant for the same wall time: try it first.
    for (const offset of early >= late ? [early, late] : [late, early]) {
      const t = wall - offset;
      if (this.offsetAt(t) === offset && out[out.length - 1] !== t) out.push(t);
    }
    return out;
  }

  /** The first instant of local time `wall`, or null if that local time does not exist. */
  firstInstantOf(wall: number): number | null {
    const early = this.offsetAt(wall - SPAN_MS);
    const late = this.offsetAt(wall + SPAN_MS);
    const first = Math.max(early, late);
    if (this.offsetAt(wall - first) === first) return wall - first;
    const second = Math.min(early, late);
    return this.offsetAt(wall - second) === second ? wall - second : null;
  }

  private learn(start: number): Bucket {
    const starts = [start];
    const offsets = [this.ask(start)];
    for (let a = start; a < start + BUCKET_MS; a += SAMPLE_MS) {
      const b = a + SAMPLE_MS;
      const current = offsets[offsets.length - 1];
      if (this.ask(b) === current) continue;
      // Bisect (a, b] to the second: offsets change on whole seconds.
      let lo = a;
      let hi = b;
      while (hi - lo > SECOND) {
        const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
        if (this.ask(mid) === current) lo = mid;
        else hi = mid;
      }
      if (hi < start + BUCKET_MS) {
        starts.push(hi);
        offsets.push(this.ask(hi));
      }
    }
    return { starts, offsets };
  }

  /** The offset at `t` straight from Intl (slow path). */
  private ask(t: number): number {
    const whole = Math.floor(t / SECOND) * SECOND;
    const m = /^(\d+)\/(\d+)\/(\d+),? (\d+):(\d+):(\d+)$/.exec(this.format.format(whole));
    if (!m) throw new Error(`unexpected Intl output for ${this.zone}`);
    const d = new Date(0);
    d.setUTCFullYear(Number(m[3]), Number(m[1]) - 1, Number(m[2]));
    d.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), 0);
    return d.getTime() - whole;
  }
}

/**
 * The instant local wall-clock time `wall` has in `zone` (`wall`: epoch ms of its fields read as
 * UTC): the first of two in a fall-back overlap (a schedule's runs fire only then); in a
 * spring-forward gap, the instant before the clocks jumped, so a window from or to it has the runs
 * just after the gap after it (Berlin's 02:30 that never was falls just before 03:00 CEST; read
 * with the offset before the gap it was 03:30, and the 03:00 and 03:15 runs fell out).
 */
export function instantOfWall(zone: string, wall: number): number {
  const z = ZoneOffsets.for(zone);
  return z.instantsOf(wall)[0] ?? gapEnd(z, Math.floor(wall / SECOND) * SECOND) - 1;
}

/** The instant a spring-forward gap holding `wall` (whole seconds) ends: offsets change on whole seconds, found by halving. */
function gapEnd(z: ZoneOffsets, wall: number): number {
  const after = z.offsetAt(wall + SPAN_MS);
  let lo = wall - after; // before the jump: read with the later offset, it falls before it
  let hi = wall - z.offsetAt(wall - SPAN_MS); // after it
  while (hi - lo > SECOND) {
    const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
    if (z.offsetAt(mid) === after) hi = mid;
    else lo = mid;
  }
  return hi;
}
