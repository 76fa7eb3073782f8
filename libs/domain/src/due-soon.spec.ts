import { dueByWindow } from './due-soon';

describe('dueByWindow', () => {
  it('adds each minute into every window that contains it, per pool', () => {
    const w = dueByWindow([
      { pool: 'default', minute: 0, n: 3 },
      { pool: 'default', minute: 4, n: 10 },
      { pool: 'default', minute: 5, n: 100 },
      { pool: 'default', minute: 59, n: 1000 },
      { pool: 'io', minute: 14, n: 7 },
    ]);
    expect(w.get('default')).toEqual({ '1m': 3, '5m': 13, '10m': 113, '15m': 113, '1h': 1113 });
    expect(w.get('io')).toEqual({ '1m': 0, '5m': 0, '10m': 0, '15m': 7, '1h': 7 });
  });

  it('ignores minutes outside the longest window', () => {
    expect(dueByWindow([{ pool: 'p', minute: 60, n: 5 }, { pool: 'p', minute: -1, n: 5 }]).get('p')).toEqual({ '1m': 0, '5m': 0, '10m': 0, '15m': 0, '1h': 0 });
  });
});
