import { HeartbeatWatch } from './heartbeat-watch';

describe('HeartbeatWatch: a worker is dead when its beat stops moving under an unbroken watch', () => {
  const t0 = 1_000_000;

  it('finds a worker dead once its beat has stood still for the whole limit, and not before', () => {
    const watch = new HeartbeatWatch(5000, 3000);
    expect(watch.look([{ id: 1, beatAtMs: t0 }, { id: 2, beatAtMs: t0 }], t0)).toEqual([]);
    for (let s = 1; s < 5; s++) expect(watch.look([{ id: 1, beatAtMs: t0 }, { id: 2, beatAtMs: t0 + s * 1000 }], t0 + s * 1000)).toEqual([]);
    expect(watch.look([{ id: 1, beatAtMs: t0 }, { id: 2, beatAtMs: t0 + 5000 }], t0 + 5000)).toEqual([1]);
  });

  it('takes nobody for dead after a stall during which nobody could beat: the watch starts over', () => {
    const watch = new HeartbeatWatch(5000, 3000);
    watch.look([{ id: 1, beatAtMs: t0 }], t0);
    // 60 s later (the database was stalled): the old beat is not held against the worker…
    expect(watch.look([{ id: 1, beatAtMs: t0 }], t0 + 60_000)).toEqual([]);
    // …which then beats again; had it not, it would be dead 5 s into the new watch.
    expect(watch.look([{ id: 1, beatAtMs: t0 + 61_000 }], t0 + 61_000)).toEqual([]);
    for (let s = 62; s < 66; s++) expect(watch.look([{ id: 1, beatAtMs: t0 + 61_000 }], t0 + s * 1000)).toEqual([]);
    expect(watch.look([{ id: 1, beatAtMs: t0 + 61_000 }], t0 + 66_000)).toEqual([1]);
    // A look that comes late breaks the watch too.
    expect(watch.look([{ id: 1, beatAtMs: t0 + 61_000 }], t0 + 70_000)).toEqual([]);
  });

  it('watches a worker first seen with an old beat for the whole limit (a promoter that just started)', () => {
    const watch = new HeartbeatWatch(5000, 3000);
    expect(watch.look([{ id: 9, beatAtMs: t0 - 3_600_000 }], t0)).toEqual([]);
    expect(watch.look([{ id: 9, beatAtMs: t0 - 3_600_000 }], t0 + 2000)).toEqual([]);
    expect(watch.look([{ id: 9, beatAtMs: t0 - 3_600_000 }], t0 + 4000)).toEqual([]);
    expect(watch.look([{ id: 9, beatAtMs: t0 - 3_600_000 }], t0 + 5000)).toEqual([9]);
  });
});
