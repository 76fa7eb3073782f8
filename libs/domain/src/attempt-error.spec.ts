import { exceptionText, LOST_ATTEMPT_ERROR, publicAttemptError, RELEASED_ATTEMPT_ERROR, setAsideError } from './attempt-error';

describe('publicAttemptError: what a tenant is told about a failed attempt', () => {
  it.each([
    ['HTTP 503', { code: 'handler', message: 'HTTP 503' }],
    ['card declined: insufficient funds', { code: 'handler', message: 'card declined: insufficient funds' }],
    ['InvalidPayloadError: charge payload: payload.invoiceId must NOT have fewer than 1 characters', { code: 'invalid_payload', message: 'charge payload: payload.invoiceId must NOT have fewer than 1 characters' }],
    ['HandlerTimeoutError: handler timed out after 50 ms', { code: 'timeout', message: 'the handler did not finish within 50 ms' }],
    [LOST_ATTEMPT_ERROR, { code: 'lost', message: LOST_ATTEMPT_ERROR }],
    ['LeaseLostError: the attempt lost its lease (rescued, or not renewed in time): the job may be running elsewhere', { code: 'lost', message: expect.stringContaining('lost its lease') }],
    [RELEASED_ATTEMPT_ERROR, { code: 'released', message: RELEASED_ATTEMPT_ERROR }],
    [setAsideError('claim', '22003'), { code: 'set_aside', message: expect.stringContaining('set aside: Postgres refused a value of this job in its claim (SQLSTATE 22003)') }],
  ])('%s', (stored, expected) => {
    expect(publicAttemptError(stored)).toEqual(expected);
  });

  it('never passes on the text of an exception: SQL, host names, stacks stay with the operator', () => {
    for (const stored of [
      'error: duplicate key value violates unique constraint "charges_pkey" DETAIL: Key (invoice_id)=(tenant-7-inv) already exists.',
      'Error: connect ECONNREFUSED 10.0.3.4:5432',
      'TypeError: Cannot read properties of undefined (reading \'id\')\n    at handle (/app/dist/apps/worker/src/handlers/charge.handler.js:31:18)',
      'RangeError: no handler registered for kind mystery on worker-7f9c-abc',
    ]) {
      const shown = publicAttemptError(stored);
      expect(shown?.code).toBe('handler_error');
      for (const secret of ['charges_pkey', '10.0.3.4', '/app/dist', 'worker-7f9c']) expect(shown?.message).not.toContain(secret);
    }
    expect(publicAttemptError(null)).toBeNull();
  });

  it('hides an exception whatever it is named: one whose name is no identifier read as a handler\'s own reason, its text shown to the tenant (review)', () => {
    const named = (name: unknown, message: string) => Object.assign(new Error(message), { name });
    const thrown = [
      named('HTTP Error', 'upstream 10.1.2.3 said 500'),
      named('', 'SELECT … host db-primary.internal:5432'),
      named(42, 'postgres://reports:s3cret@10.0.3.4/reports refused'),
      'postgres://reports:s3cret@10.0.3.4/reports refused',
      Object.create(null) as unknown,
    ];
    for (const error of thrown) {
      const shown = publicAttemptError(exceptionText(error));
      expect(shown?.code).toBe('handler_error');
      for (const secret of ['10.1.2.3', 'db-primary', 's3cret']) expect(shown?.message).not.toContain(secret);
    }
    expect(exceptionText(named('TypeError', 'x is undefined'))).toBe('TypeError: x is undefined');
  });
});
