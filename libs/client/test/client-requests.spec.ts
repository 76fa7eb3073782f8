import { createClient, InvalidIdError, NotFoundError, UnavailableError } from '../src';

/** A fetch that answers from a script, one answer per call, and records what was asked. */
function scripted(...answers: { status: number; body?: unknown; retryAfter?: string }[]) {
  const calls: { url: string; method: string; signal?: AbortSignal | null }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    calls.push({ url: input instanceof Request ? input.url : input.toString(), method: init?.method ?? 'GET', signal: init?.signal });
    const a = answers[Math.min(calls.length - 1, answers.length - 1)];
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (a.retryAfter !== undefined) headers['Retry-After'] = a.retryAfter;
    return new Response(a.body === undefined ? '' : JSON.stringify(a.body), { status: a.status, headers });
  };
  return { calls, fetch };
}

const error = (status: number, message: string) => ({ statusCode: status, error: '', message, details: [] });
const schedule = { id: '42', key: 's' };

describe('@almanac/client: requests as it sends them (no server)', () => {
  it('refuses, before any request, an id that is not a string of digits, naming it', async () => {
    const { calls, fetch } = scripted({ status: 200, body: { items: [], nextCursor: null } });
    const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch });
    for (const call of [() => client.jobs.get(''), () => client.jobs.get('.'), () => client.schedules.get('..'), () => client.jobs.cancel('1/../'),
      () => client.schedules.nextRuns('%2e'), () => client.operations.get(' 1'), () => client.jobs.waitFor('1.5', 1)]) {
      const e = await call().then(() => undefined, (err: unknown) => err);
      expect(e).toBeInstanceOf(InvalidIdError);
      expect((e as InvalidIdError).message).toMatch(/^(job|schedule|operation) id must be a string of digits or a safe non-negative integer, got "/);
    }
    expect((await client.jobs.get('').catch((e: InvalidIdError) => e)) as InvalidIdError).toMatchObject({ resource: 'job', id: '' });
    expect(calls).toEqual([]);
    await client.jobs.get('1234567890123');
    expect(calls.map((c) => c.url)).toEqual(['http://api/v1/jobs/1234567890123']);
  });

  it("takes a JavaScript caller's safe non-negative integer id as its digits, and refuses other numbers", async () => {
    const { calls, fetch } = scripted({ status: 200, body: schedule });
    const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch });
    const untyped = (id: number) => id as unknown as string; // as plain JavaScript would pass it
    await client.operations.get(untyped(42));
    await client.jobs.get(untyped(0));
    await client.schedules.get(untyped(Number.MAX_SAFE_INTEGER));
    expect(calls.map((c) => c.url)).toEqual(['http://api/v1/operations/42', 'http://api/v1/jobs/0', `http://api/v1/schedules/${Number.MAX_SAFE_INTEGER}`]);
    for (const bad of [-1, 1.5, Number.NaN, Infinity, 2 ** 53]) {
      await expect(client.jobs.get(untyped(bad))).rejects.toMatchObject({ name: 'InvalidIdError', id: bad });
    }
    expect(calls).toHaveLength(3);
  });

  it('does not retry a schedule delete after a 503: its retry would answer 404 for a delete that went through', async () => {
    const { calls, fetch } = scripted({ status: 503, body: error(503, 'busy'), retryAfter: '1' }, { status: 404, body: error(404, 'schedule 42 not found') });
    const delays: number[] = [];
    const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch, delay: async (ms) => void delays.push(ms) });
    const e = await client.schedules.delete('42').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(UnavailableError);
    expect(e).not.toBeInstanceOf(NotFoundError);
    expect(calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('retries a bulk operation after a 503 only when it has a key (a resend then answers the same operation)', async () => {
    const operation = { id: '7', state: 'pending' };
    for (const [send, sent] of [
      [(c: ReturnType<typeof createClient>) => c.jobs.bulkReschedule({ filter: { kind: 'email' }, shiftBySeconds: 3600, key: 'move-1' }), 2],
      [(c: ReturnType<typeof createClient>) => c.jobs.bulkReschedule({ filter: { kind: 'email' }, shiftBySeconds: 3600 }), 1],
      [(c: ReturnType<typeof createClient>) => c.jobs.bulkCancel({ filter: { kind: 'email' }, key: 'stop-1' }), 2],
      [(c: ReturnType<typeof createClient>) => c.jobs.bulkCancel({ filter: { kind: 'email' } }), 1],
    ] as const) {
      const { calls, fetch } = scripted({ status: 503, body: error(503, 'busy'), retryAfter: '1' }, { status: 200, body: operation });
      const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch, delay: async () => undefined });
      await send(client).catch(() => undefined);
      expect(calls).toHaveLength(sent);
    }
  });

  it('still retries a schedule delete after a 429, which is refused before any work', async () => {
    const { calls, fetch } = scripted({ status: 429, body: error(429, 'slow down'), retryAfter: '1' }, { status: 200, body: schedule });
    const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch, delay: async () => undefined });
    expect(await client.schedules.delete('42')).toEqual(schedule);
    expect(calls.map((c) => c.method)).toEqual(['DELETE', 'DELETE']);
  });

  it('hands timers only what they take: whole milliseconds from 1 to 2^31-1', async () => {
    // Retry-After of 30 days with no cap on the wait: ~24.8 days, never the ~1 ms Node makes of more.
    const { fetch } = scripted({ status: 429, body: error(429, 'later'), retryAfter: String(30 * 86400) }, { status: 200, body: schedule });
    const delays: number[] = [];
    const patient = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch, retry: { maxDelayMs: Infinity }, delay: async (ms) => void delays.push(ms) });
    await patient.schedules.get('42');
    expect(delays).toEqual([2 ** 31 - 1]);

    // Timeouts of Infinity, a fraction, or past 2^31-1 ms are not a RangeError.
    for (const timeoutMs of [Infinity, 2.5, 2 ** 32]) {
      const ok = scripted({ status: 200, body: schedule });
      const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch: ok.fetch, timeoutMs });
      await expect(client.schedules.get('42')).resolves.toEqual(schedule);
      expect(ok.calls[0].signal?.aborted).toBe(false);
    }
    const fraction = scripted({ status: 200, body: schedule });
    await expect(createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch: fraction.fetch, timeoutMs: 0.5 }).jobs.waitFor('42', 0.0015)).resolves.toEqual(schedule);
  });

  it('reports created: null, not false, for a create answered 200 after a resent 503 (the first attempt may have made it)', async () => {
    const runAt = '2027-01-01T00:00:00Z';
    const created = async (first: number, last: number) => {
      const answer = (status: number, body: object) => (status < 400 ? { status, body } : { status, body: error(status, 'busy'), retryAfter: '1' });
      const client = (body: object) => createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch: scripted(answer(first, body), answer(last, body)).fetch, delay: async () => undefined });
      const job = await client({ id: '9', key: 'k' }).jobs.create({ kind: 'http', key: 'k', runAt, payload: { url: 'https://x.example/' } });
      const made = await client(schedule).schedules.create({ kind: 'http', key: 's', cron: '0 9 * * *', timezone: 'UTC', payload: { url: 'https://x.example/' } });
      return [job.created, made.created];
    };
    expect(await created(503, 200)).toEqual([null, null]);
    expect(await created(503, 201)).toEqual([true, true]);
    expect(await created(429, 200)).toEqual([false, false]); // a 429 is refused before any work
    expect(await created(200, 200)).toEqual([false, false]);
    expect(await created(201, 201)).toEqual([true, true]);
  });
});
