import { isRowLockTimeout, sqlStateOf } from './dependency-errors';

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
});
