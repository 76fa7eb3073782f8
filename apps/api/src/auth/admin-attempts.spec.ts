import { ManualClock, type AlmanacConfig } from '@almanac/platform';
import type { FastifyRequest } from 'fastify';
import { ADMIN_FAILURES, AdminAttempts, AdminAuthGuard } from './guards';

const TOKEN = 'the-admin-token-0123456789';
const request = (token: string, ip = '203.0.113.7') => ({ headers: { authorization: `Bearer ${token}` }, ip }) as unknown as FastifyRequest;
const status = (guard: AdminAuthGuard, req: FastifyRequest): number => {
  try {
    guard.check(req);
    return 200;
  } catch (err) {
    return (err as { status: number }).status;
  }
};

describe('the admin token has an attempt limit', () => {
  it(`answers 429 to an address past ${ADMIN_FAILURES} wrong tokens, whatever it sends next, until its bucket refills; other addresses go on`, () => {
    const clock = new ManualClock(0);
    const guard = new AdminAuthGuard({ adminToken: TOKEN } as AlmanacConfig, clock, new AdminAttempts());
    expect(status(guard, request(TOKEN))).toBe(200);
    for (let i = 0; i < ADMIN_FAILURES; i++) expect(status(guard, request(`guess-${i}`))).toBe(401);
    expect(status(guard, request('guess-x'))).toBe(429);
    expect(status(guard, request(TOKEN))).toBe(429); // a right guess looks like a wrong one
    expect(status(guard, request(TOKEN, '198.51.100.1'))).toBe(200);
    clock.advance(6_000); // one wrong token more
    expect(status(guard, request('guess-y'))).toBe(401);
    expect(status(guard, request(TOKEN))).toBe(429);
    clock.advance(6_000);
    expect(status(guard, request(TOKEN))).toBe(200); // right tokens never count
    expect(status(guard, request(TOKEN))).toBe(200);
  });

  it('counts a wrong token once per address, however often the same one comes again (a script still sending a rotated token)', () => {
    const guard = new AdminAuthGuard({ adminToken: TOKEN } as AlmanacConfig, new ManualClock(0), new AdminAttempts());
    for (let i = 0; i < ADMIN_FAILURES * 3; i++) expect(status(guard, request('the-token-before-rotation'))).toBe(401);
    expect(status(guard, request(TOKEN))).toBe(200);
    for (let i = 1; i < ADMIN_FAILURES; i++) expect(status(guard, request(`guess-${i}`))).toBe(401);
    expect(status(guard, request(TOKEN))).toBe(429); // different wrong tokens still count, each once
    expect(status(guard, request('the-token-before-rotation'))).toBe(429);
  });

  it("keeps an address's counted secrets whatever other addresses send: a thousand new addresses' guesses a round do not make a resend count again", () => {
    const guard = new AdminAuthGuard({ adminToken: TOKEN } as AlmanacConfig, new ManualClock(0), new AdminAttempts());
    for (let round = 0; round < ADMIN_FAILURES; round++) {
      expect(status(guard, request('the-token-before-rotation'))).toBe(401); // the proxy's stale cookie, once a round
      for (let n = round * 1_000; n < (round + 1) * 1_000; n++) for (let i = 0; i < ADMIN_FAILURES; i++) status(guard, request(`guess-${i}`, `198.51.${n >> 8}.${n & 255}`));
    }
    expect(status(guard, request(TOKEN))).toBe(200);
  });

  it('counts an IPv6 /64 as one address, however its addresses are written', () => {
    const guard = new AdminAuthGuard({ adminToken: TOKEN } as AlmanacConfig, new ManualClock(0), new AdminAttempts());
    for (let i = 0; i < ADMIN_FAILURES; i++) expect(status(guard, request(`guess-${i}`, '2001:db8::1:2:3:4'))).toBe(401);
    expect(status(guard, request(TOKEN, '2001:db8::5'))).toBe(429);
    expect(status(guard, request(TOKEN, '2001:db8:0:1::5'))).toBe(200); // the next /64
  });
});
