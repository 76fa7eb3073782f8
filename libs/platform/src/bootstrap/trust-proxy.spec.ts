import { Controller, Get, Module, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { loadConfig } from '../config/almanac-config';
import { httpAdapter, NEST_HTTP_OPTIONS } from './bootstrap-role';

@Controller()
class WhoController {
  @Get('who')
  who(@Req() req: FastifyRequest): { ip: string } {
    return { ip: req.ip };
  }
}

@Module({ controllers: [WhoController] })
class WhoModule {}

/** The address a request from this host that says it forwards 203.0.113.7 is seen from. */
async function seenFrom(env: Record<string, string>): Promise<string> {
  const app = await NestFactory.create(WhoModule, httpAdapter(loadConfig(env)), { ...NEST_HTTP_OPTIONS, logger: false });
  try {
    await app.listen(0, '127.0.0.1');
    const res = await fetch(`${await app.getUrl()}/who`, { headers: { 'x-forwarded-for': '203.0.113.7' } });
    return ((await res.json()) as { ip: string }).ip;
  } finally {
    await app.close();
  }
}

describe('the client address behind a proxy (ALMANAC_TRUST_PROXY)', () => {
  it('is the proxy itself unless the proxy is trusted; then the client it names (the per-address limits count clients)', async () => {
    expect(await seenFrom({})).toBe('127.0.0.1'); // anyone could claim any X-Forwarded-For
    expect(await seenFrom({ ALMANAC_TRUST_PROXY: '127.0.0.1/8' })).toBe('203.0.113.7');
    expect(await seenFrom({ ALMANAC_TRUST_PROXY: '10.0.0.0/8' })).toBe('127.0.0.1'); // a proxy not on the list is not believed
  });

  it('refuses at boot a value that is no address, naming the setting', () => {
    expect(() => loadConfig({ ALMANAC_TRUST_PROXY: 'ingress.local' })).toThrow(/ALMANAC_TRUST_PROXY must be addresses or CIDR ranges/);
  });
});
