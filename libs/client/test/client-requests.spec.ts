import { createClient, InvalidIdError } from '../src';

/** A fetch that answers from a script, one answer per call, and records what was asked. */
function scripted(...answers: { status: number; body?: unknown; retryAfter?: string }[]) {
  const calls: { url: string; method: string; signal?: AbortSignal | null }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    calls.push({ url: String(input), method: init?.method ?? 'GET', signal: init?.signal });
    const a = answers[Math.min(calls.length - 1, answers.length - 1)];
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (a.retryAfter !== undefined) headers['Retry-After'] = a.retryAfter;
    return new Response(a.body === undefined ? '' : JSON.stringify(a.body), { status: a.status, headers });
  };
  return { calls, fetch: fetch as typeof globalThis.fetch };
}


describe('@almanac/client: requests as it sends them (no server)', () => {
  it('refuses, before any request, an id that is not a string of digits, naming it', async () => {
    const { calls, fetch } = scripted({ status: 200, body: { items: [], nextCursor: null } });
    const client = createClient({ baseUrl: 'http://api', apiKey: 'alm_x', fetch });
    for (const call of [() => client.jobs.get(''), () => client.jobs.get('.'), () => client.schedules.get('..'), () => client.jobs.cancel('1/../'),
      () => client.schedules.nextRuns('%2e'), () => client.operations.get(' 1'), () => client.jobs.waitFor('1.5', 1)]) {
      const e = await call().then(() => undefined, (err: unknown) => err);
      expect(e).toBeInstanceOf(InvalidIdError);
      expect((e as InvalidIdError).message).toMatch(/^(job|schedule|operation) id must be a string of digits, got "/);
    }
    expect((await client.jobs.get('').catch((e: InvalidIdError) => e)) as InvalidIdError).toMatchObject({ resource: 'job', id: '' });
    expect(calls).toEqual([]);
    await client.jobs.get('1234567890123');
    expect(calls.map((c) => c.url)).toEqual(['http://api/v1/jobs/1234567890123']);
  });
});
