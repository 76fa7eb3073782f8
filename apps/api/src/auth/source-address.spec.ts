import type { FastifyRequest } from 'fastify';
import { sourceOf } from './source-address';

const source = (ip: string): string => sourceOf({ ip } as FastifyRequest);

describe('the source a request is counted under', () => {
  it('is one per IPv6 /64, however the address is written', () => {
    const key = source('2001:db8::1:2:3:4');
    for (const ip of ['2001:db8::ffff:2:3:4', '2001:db8::5', '2001:0DB8:0:0:0:0:0:6', '2001:db8::1.2.3.4', '2001:db8::5%eth0']) {
      expect(source(ip)).toBe(key);
    }
    expect(key).toBe('2001:db8::/64');
  });

  it('tells different /64s apart', () => {
    expect(source('2001:db8:0:1::5')).not.toBe(source('2001:db8::5'));
    expect(source('2001:db8:1::5')).not.toBe(source('2001:db8::5'));
  });

  it('is the address for IPv4, also mapped into IPv6', () => {
    expect(source('203.0.113.7')).toBe('203.0.113.7');
    expect(source('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(source('::ffff:203.0.113.8')).not.toBe(source('::ffff:203.0.113.7'));
  });
});
