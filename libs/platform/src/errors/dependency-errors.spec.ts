import { isRowLockTimeout, publicCause, sqlStateOf } from './dependency-errors';

describe('what a Postgres error says', () => {
  it('takes a lock timeout whose context names a tuple by its place for a wait on rows, in any server language', () => {
    const wrapped = (where?: string) => ({ message: 'QueryFailedError', driverError: { code: '55P03', where } });
    expect(isRowLockTimeout(wrapped('while inserting index tuple (0,2) in relation "jobs_tenant_key"'))).toBe(true);
    expect(isRowLockTimeout(wrapped('beim Einfügen von Indextupel (12, 7) in Relation »jobs_tenant_key«'))).toBe(true);
    expect(isRowLockTimeout(wrapped())).toBe(false); // a lock on the whole table has no context
    expect(isRowLockTimeout({ code: '57014', where: 'while inserting index tuple (0,2)' })).toBe(false);
  });

  it("reads a SQLSTATE, not Node's error codes", () => {
    expect(sqlStateOf({ code: 'EPIPE' })).toBeUndefined();
    expect(sqlStateOf({ driverError: { code: '55P03' } })).toBe('55P03');
  });

  it('tells a tenant the class and SQLSTATE of a failure, never its message', () => {
    const secret = 'at internal-host-db7:5432 secret';
    const cases: [unknown, string][] = [
      [{ driverError: { code: '22003', message: secret } }, 'a value Postgres refused (22003)'],
      [{ code: '23505', message: secret }, 'a value Postgres refused (23505)'],
      [{ code: '55P03', message: secret }, 'a lock wait ran out (55P03)'],
      [{ code: '40P01', message: secret }, 'a deadlock (40P01)'],
      [{ code: '42P01', message: secret }, 'a statement Postgres refused (42P01)'],
      [{ code: '57P01', message: secret }, 'the database or queue was unavailable (57P01)'],
      [{ code: 'ECONNREFUSED', message: `connect ECONNREFUSED ${secret}` }, 'the database or queue was unavailable'],
      [{ code: 'P0001', message: secret }, 'a Postgres error (P0001)'],
      [new Error(secret), 'an internal error'],
    ];
    for (const [err, said] of cases) expect(publicCause(err)).toBe(said);
  });
});
