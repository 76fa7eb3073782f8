import { failureLasts, failureReason } from './bulk-failures';

const pgError = (code: string, message = `error ${code}`) => Object.assign(new Error(message), { code });
/** As typeorm throws it: the driver's error inside. */
const wrapped = (code: string, message?: string) => Object.assign(new Error('query failed'), { driverError: pgError(code, message) });
/** Postgres' 57014 for a statement over its statement timeout, and for an operator's pg_cancel_backend. */
const statementTimeout = () => wrapped('57014', 'canceling statement due to statement timeout');
const operatorCancel = () => wrapped('57014', 'canceling statement due to user request');

describe('failureLasts', () => {
  it.each([
    ['22003', 'a value out of range'],
    ['23514', 'a check constraint'],
    ['42P01', 'an undefined table'],
    ['42501', 'a privilege missing'],
    ['54000', 'a program limit'],
  ])('a step Postgres refused (%s, %s) fails the same way however often it is tried', (code) => {
    expect(failureLasts(wrapped(code), 'match')).toBe(true);
    expect(failureLasts(wrapped(code), 'apply')).toBe(true);
  });

  it("a statement timeout lasts for a match (the same filter reads the same rows), not for a chunk (it waited on locks, and failing it leaves the operation half done)", () => {
    expect(failureLasts(statementTimeout(), 'match')).toBe(true);
    expect(failureLasts(statementTimeout(), 'apply')).toBe(false);
  });

  it("an operator's cancel (57014 too) passes, even of a match", () => {
    expect(failureLasts(operatorCancel(), 'match')).toBe(false); // before: true
    expect(failureLasts(operatorCancel(), 'apply')).toBe(false);
  });

  it.each(['55P03', '40P01', '40001'])('a lock timeout, deadlock or serialization failure (%s) passes', (code) => {
    expect(failureLasts(wrapped(code), 'match')).toBe(false);
    expect(failureLasts(wrapped(code), 'apply')).toBe(false);
  });

  it('an error without a SQLSTATE passes', () => {
    expect(failureLasts(new Error('something else'), 'apply')).toBe(false);
  });
});

describe('failureReason', () => {
  it("tells the tenant to narrow a filter whose match keeps timing out, and otherwise the class of the cause, never Postgres' message", () => {
    expect(failureReason(statementTimeout(), 'match', 3)).toMatch(/statement timeout 3 times in a row: narrow the filter/);
    expect(failureReason(pgError('22003', 'poison at internal-host-db7:5432'), 'apply', 3)).toBe(
      "its apply failed 3 times in a row: a value Postgres refused (22003); the operator's logs have the details under this operation's id",
    );
    expect(failureReason(wrapped('42P01', 'relation "secret_table" does not exist'), 'match', 4)).toMatch(/^its match failed 4 times in a row: a statement Postgres refused \(42P01\);/);
    expect(failureReason(wrapped('54000', 'too many columns'), 'apply', 3)).toMatch(/: a statement over a Postgres limit \(54000\);/);
  });
});
