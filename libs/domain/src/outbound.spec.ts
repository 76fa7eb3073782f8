import { DomainValidationError } from './errors';
import { formatIp, parseCidr, parseIp } from './ip-address';
import { hostRuleMatches, outboundVerdict, parseHostRule, parseHostRules, refusedRange, type UrlTarget } from './outbound';

const target = (url: string): UrlTarget => {
  const u = new URL(url);
  const scheme = u.protocol.slice(0, -1);
  return { scheme, host: u.hostname, port: u.port ? Number(u.port) : scheme === 'https' ? 443 : 80 };
};

describe('outbound addresses', () => {
  it('parses IPv4, IPv6 (compressed, with an IPv4 tail, with a zone) and refuses the rest', () => {
    expect(parseIp('10.1.2.3')).toEqual({ version: 4, bytes: [10, 1, 2, 3] });
    expect(formatIp(parseIp('::1')!)).toBe('::1');
    expect(formatIp(parseIp('[2001:DB8:0:0:1::1]')!)).toBe('2001:db8::1:0:0:1');
    expect(parseIp('::ffff:127.0.0.1')!.bytes).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1]);
    expect(parseIp('fe80::1%eth0')!.version).toBe(6);
    for (const bad of ['', '1.2.3', '1.2.3.256', '01.2.3.4', '0x7f.0.0.1', '1::2::3', '1:2:3:4:5:6:7:8:9', 'example.com', '12345::']) {
      expect([bad, parseIp(bad)]).toEqual([bad, null]);
    }
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['10.0.0.5', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'shared (carrier-grade NAT)'],
    ['224.0.0.1', 'multicast'],
    ['64:ff9b::a9fe:a9fe', 'metadata (inside an IPv6 address)'],
    ['2002:7f00:1::1', 'loopback (inside an IPv6 address)'],
    ['::127.0.0.1', 'reserved'],
    ['nonsense', 'unparsable'],
  ])('refuses %s (%s)', (address, why) => {
    expect(refusedRange(address)).toBe(why);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])('lets the public address %s through', (address) => {
    expect(refusedRange(address)).toBeNull();
  });

  it('lets through only the ranges an operator allows, and nothing next to them', () => {
    const allowed = [parseCidr('127.0.0.1/32')!, parseCidr('10.20.0.0/16')!];
    expect(refusedRange('127.0.0.1', allowed)).toBeNull();
    expect(refusedRange('::ffff:127.0.0.1', allowed)).toBeNull(); // the same host
    expect(refusedRange('127.0.0.2', allowed)).toBe('loopback');
    expect(refusedRange('::1', allowed)).toBe('loopback');
    expect(refusedRange('10.20.255.1', allowed)).toBeNull();
    expect(refusedRange('10.21.0.1', allowed)).toBe('private');
    expect(refusedRange('169.254.169.254', allowed)).toBe('metadata');
  });

  it('keeps refusing a cloud metadata address inside an allowed range, unless the operator names that address itself', () => {
    const broad = ['fd00::/8', '169.254.0.0/16', '100.64.0.0/10', '64:ff9b::/96'].map((c) => parseCidr(c)!);
    expect(refusedRange('fd00:ec2::254', broad)).toBe('metadata');
    expect(refusedRange('169.254.169.254', broad)).toBe('metadata');
    expect(refusedRange('::ffff:169.254.169.254', broad)).toBe('metadata');
    expect(refusedRange('100.100.100.200', broad)).toBe('metadata');
    for (const credentials of ['169.254.170.2', '169.254.170.23', 'fd00:ec2::23']) expect(refusedRange(credentials, broad)).toBe('metadata');
    expect(refusedRange('64:ff9b::a9fe:a9fe', broad)).toBe('metadata (inside an IPv6 address)');
    expect(refusedRange('169.254.10.1', broad)).toBeNull(); // the rest of the range is allowed
    expect(refusedRange('169.254.169.254', [parseCidr('169.254.169.254')!])).toBeNull(); // named exactly
  });

  it('parses CIDRs into canonical form and refuses malformed ones', () => {
    expect(parseCidr('10.20.30.40/16')!.text).toBe('10.20.0.0/16');
    expect(parseCidr('127.0.0.1')!.text).toBe('127.0.0.1/32');
    expect(parseCidr('FD00::1/8')!.text).toBe('fd00::/8');
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/8/1', 'x/8', '10.0.0.0/08']) expect(parseCidr(bad)).toBeNull();
  });
});

describe('allow-list entries', () => {
  it('match scheme, host and port exactly; the port defaults to the scheme’s', () => {
    const rule = parseHostRule('https://api.example.com', 'e');
    expect(rule.text).toBe('https://api.example.com');
    expect(hostRuleMatches(rule, target('https://api.example.com/x'))).toBe(true);
    expect(hostRuleMatches(rule, target('https://API.Example.com./x'))).toBe(true);
    expect(hostRuleMatches(rule, target('https://api.example.com:443/x'))).toBe(true);
    expect(hostRuleMatches(rule, target('http://api.example.com/x'))).toBe(false);
    expect(hostRuleMatches(rule, target('https://api.example.com:8443/x'))).toBe(false);
    expect(hostRuleMatches(rule, target('https://x.api.example.com/x'))).toBe(false);
    expect(hostRuleMatches(rule, target('https://api.example.com.evil.io/x'))).toBe(false);
    expect(parseHostRule('HTTP://127.0.0.1:8080', 'e').text).toBe('http://127.0.0.1:8080');
    expect(parseHostRule('https://api.example.com:443', 'e').text).toBe('https://api.example.com');
  });

  it('match subdomains only where a wildcard is spelled out, and never the bare domain', () => {
    const rule = parseHostRule('https://*.example.com', 'e');
    expect(hostRuleMatches(rule, target('https://a.example.com/'))).toBe(true);
    expect(hostRuleMatches(rule, target('https://a.b.example.com/'))).toBe(true);
    expect(hostRuleMatches(rule, target('https://example.com/'))).toBe(false);
    expect(hostRuleMatches(rule, target('https://badexample.com/'))).toBe(false);
    expect(hostRuleMatches(rule, target('http://a.example.com/'))).toBe(false);
    expect(hostRuleMatches(rule, target('https://a.example.com:8443/'))).toBe(false);
  });

  it('compare IPv6 hosts by address', () => {
    const rule = parseHostRule('http://[0:0::1]:8080', 'e');
    expect(rule.text).toBe('http://[::1]:8080');
    expect(hostRuleMatches(rule, target('http://[::1]:8080/'))).toBe(true);
  });

  it('refuse anything that is not an origin, naming the entry', () => {
    const bad: unknown[] = [
      'api.example.com', 'api.example.com:443', 'ftp://x.com', 'https://x.com/path', 'https://x.com/', 'https://u@x.com', 'https://x.com:0',
      'https://x.com:99999', 'https://*.com', 'https://*.10.0.0.1', 'https://a*.x.com', 'https://-x.com', 'https://x..com', 'https://999.1.1.1',
      'https://x.com?q', 'https://[zz]', 7, null,
    ];
    for (const entry of bad) {
      expect(() => parseHostRule(entry, 'httpAllowHosts[2]')).toThrow(DomainValidationError);
      try {
        parseHostRule(entry, 'httpAllowHosts[2]');
      } catch (e) {
        expect((e as DomainValidationError).field).toBe('httpAllowHosts[2]');
      }
    }
  });

  it('parse a list, deduplicated in canonical spelling, with errors naming the index', () => {
    expect(parseHostRules(['https://a.com', 'HTTPS://A.COM:443', 'http://b.com:81'], 'h').map((r) => r.text)).toEqual(['https://a.com', 'http://b.com:81']);
    expect(() => parseHostRules(['https://a.com', 'https://b.com', 'b.com'], 'httpAllowHosts')).toThrow(/httpAllowHosts\[2\]/);
    expect(() => parseHostRules('https://a.com', 'httpAllowHosts')).toThrow(/array/);
    expect(() => parseHostRules(Array.from({ length: 101 }, (_, i) => `https://h${i}.com`), 'h')).toThrow(/at most 100/);
  });

  it('allow a URL only when both the installation’s list and the tenant’s allow it', () => {
    const installation = parseHostRules(['https://*.hooks.example.com', 'https://partner.io'], 'g');
    const tenant = parseHostRules(['https://acme.hooks.example.com', 'https://other.io'], 't');
    expect(outboundVerdict(target('https://acme.hooks.example.com/x'), installation, tenant)).toBe('allowed');
    expect(outboundVerdict(target('https://beta.hooks.example.com/x'), installation, tenant)).toBe('tenant');
    expect(outboundVerdict(target('https://other.io/x'), installation, tenant)).toBe('installation');
    expect(outboundVerdict(target('https://partner.io/x'), installation, [])).toBe('tenant');
  });
});
