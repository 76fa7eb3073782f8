import { describeValue, DomainValidationError } from './errors';

/**
 * Rules for the `http` kind's outbound calls (issue 16), pure: which URLs a tenant may call
 * (allow-list entries) and which IP addresses may be connected to (CIDR math, no `node:net`).
 * The worker applies them after DNS, on the address it then connects to.
 */

/** An IP address as its bytes: 4 for IPv4, 16 for IPv6. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: readonly number[];
}

export interface Cidr extends IpAddress {
  readonly prefix: number;
  /** As written in canonical form, e.g. `127.0.0.1/32`. */
  readonly text: string;
}

function parseIpv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function parseIpv6(input: string): number[] | null {
  let s = input;
  const zone = s.indexOf('%'); // fe80::1%eth0: the zone does not change the address's range
  if (zone >= 0) s = s.slice(0, zone);
  let v4Tail: number[] = [];
  if (s.includes('.')) {
    const at = s.lastIndexOf(':');
    const v4 = parseIpv4(s.slice(at + 1));
    if (at < 0 || !v4) return null;
    v4Tail = v4;
    s = s.slice(0, at + 1);
    if (!s.endsWith('::')) s = s.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  const words = head.length + tail.length + v4Tail.length / 2;
  if (halves.length === 2 ? words > 7 : words !== 8) return null;
  const all = [...head, ...new Array<number>(8 - words).fill(0), ...tail];
  const bytes = all.flatMap((w) => [w >> 8, w & 0xff]);
  return [...bytes, ...v4Tail];
}

/** An IPv4 or IPv6 address (brackets and an IPv6 zone allowed), or null. */
export function parseIp(text: string): IpAddress | null {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (t.includes(':')) {
    const bytes = parseIpv6(t);
    return bytes ? { version: 6, bytes } : null;
  }
  const bytes = parseIpv4(t);
  return bytes ? { version: 4, bytes } : null;
}

/** `a.b.c.d/n` or `x:y::/n`; a bare address is its own /32 or /128. Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const [addr, len, extra] = text.trim().split('/');
  if (extra !== undefined) return null;
  const ip = parseIp(addr);
  if (!ip) return null;
  const max = ip.version === 4 ? 32 : 128;
  if (len !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(len)) return null;
  const prefix = len === undefined ? max : Number(len);
  if (prefix > max) return null;
  const bytes = ip.bytes.map((b, i) => b & maskByte(prefix, i));
  return { version: ip.version, bytes, prefix, text: `${formatIp({ version: ip.version, bytes })}/${prefix}` };
}

function maskByte(prefix: number, i: number): number {
  const bits = Math.max(0, Math.min(8, prefix - i * 8));
  return (0xff << (8 - bits)) & 0xff;
}

export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.version !== ip.version) return false;
  return ip.bytes.every((b, i) => (b & maskByte(cidr.prefix, i)) === cidr.bytes[i]);
}

export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return ip.bytes.join('.');
  const words = Array.from({ length: 8 }, (_, i) => (ip.bytes[2 * i] << 8) | ip.bytes[2 * i + 1]);
  // The longest run of two or more zero words becomes "::" (RFC 5952).
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** `::ffff:a.b.c.d` is the IPv4 host a.b.c.d (Linux connects a dual-stack socket to it). */
function unmapped(ip: IpAddress): IpAddress {
  if (ip.version === 6 && ip.bytes.slice(0, 10).every((b) => b === 0) && ip.bytes[10] === 0xff && ip.bytes[11] === 0xff) {
    return { version: 4, bytes: ip.bytes.slice(12) };
  }
  return ip;
}

/** Why an address is refused; the most specific range first. */
const REFUSED: readonly [string, string][] = [
  // Cloud metadata services (AWS, GCP, Azure, Oracle, DigitalOcean: 169.254.169.254; Alibaba; AWS over IPv6).
  ['169.254.169.254/32', 'metadata'],
  ['100.100.100.200/32', 'metadata'],
  ['fd00:ec2::254/128', 'metadata'],
  ['0.0.0.0/8', 'unspecified'], // 0.0.0.0 reaches the local host on Linux
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'shared (carrier-grade NAT)'],
  ['169.254.0.0/16', 'link-local'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['198.18.0.0/15', 'benchmarking'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'reserved'], // IPv4-compatible, deprecated
  ['64:ff9b:1::/48', 'reserved'], // local-use NAT64
  ['100::/64', 'reserved'], // discard-only
  ['2001::/32', 'reserved'], // Teredo: an IPv4 address tunnelled, obfuscated
  ['2001:db8::/32', 'documentation'],
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'reserved'], // site-local, deprecated
  ['ff00::/8', 'multicast'],
];
const REFUSED_CIDRS: readonly [Cidr, string][] = REFUSED.map(([c, why]) => [parseCidr(c)!, why]);
const NAT64 = parseCidr('64:ff9b::/96')!;
const SIX_TO_FOUR = parseCidr('2002::/16')!;

/**
 * Why `address` must not be connected to ('loopback', 'private', 'link-local', 'metadata', …),
 * or null when it may. An address inside one of `allowed` (the operator's explicit CIDRs) may;
 * IPv4-mapped IPv6 is judged as its IPv4 address, and the IPv4 address inside NAT64 and 6to4
 * addresses is judged too. Anything that does not parse is refused.
 */
export function refusedRange(address: string | IpAddress, allowed: readonly Cidr[] = []): string | null {
  const parsed = typeof address === 'string' ? parseIp(address) : address;
  if (!parsed) return 'unparsable';
  const ip = unmapped(parsed);
  if (allowed.some((c) => cidrContains(c, ip) || cidrContains(c, parsed))) return null;
  if (ip.version === 6) {
    const embedded = cidrContains(NAT64, ip) ? ip.bytes.slice(12) : cidrContains(SIX_TO_FOUR, ip) ? ip.bytes.slice(2, 6) : null;
    if (embedded) {
      const inner = refusedRange({ version: 4, bytes: embedded }, allowed);
      if (inner) return `${inner} (inside an IPv6 address)`;
    }
  }
  for (const [cidr, why] of REFUSED_CIDRS) if (cidrContains(cidr, ip)) return why;
  return null;
}

/**
 * One entry of an allow-list: `scheme://host[:port]`, nothing after it. The port defaults to the
 * scheme's (80, 443). `*.` before the host matches its subdomains at any depth and not the host
 * itself: `https://*.example.com` allows `https://a.example.com` and `https://a.b.example.com`,
 * not `https://example.com`, not `http://a.example.com`, not port 8443.
 */
export interface HostRule {
  readonly scheme: 'http' | 'https';
  /** Lower-case DNS name, dotted IPv4, or IPv6 in brackets (canonical form). */
  readonly host: string;
  readonly subdomains: boolean;
  readonly port: number;
  /** Canonical spelling (what is stored and shown). */
  readonly text: string;
}

/** What a URL is judged by: `https`, `api.example.com` (IPv6 in brackets), 443. */
export interface UrlTarget {
  scheme: string;
  host: string;
  port: number;
}

const RULE_SHAPE = /^([hH][tT][tT][pP][sS]?):\/\/(\*\.)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?$/;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const MAX_HOST_RULES = 100;
const MAX_RULE_LENGTH = 300;

export function defaultPort(scheme: string): number {
  return scheme === 'https' ? 443 : 80;
}

/** Parses an allow-list entry, or throws DomainValidationError naming `field`. */
export function parseHostRule(raw: unknown, field: string): HostRule {
  const shape = `${field} must be scheme://host[:port] with nothing after it (http or https; "*." before the host for its subdomains), got ${describeValue(raw)}`;
  if (typeof raw !== 'string' || raw.length > MAX_RULE_LENGTH) throw new DomainValidationError(field, 'format', shape);
  const m = RULE_SHAPE.exec(raw.trim());
  if (!m) throw new DomainValidationError(field, 'format', shape);
  const scheme = m[1].toLowerCase() as 'http' | 'https';
  const subdomains = m[2] !== undefined;
  let host = m[3].toLowerCase();
  if (host.startsWith('[')) {
    const ip = parseIp(host);
    if (!ip || ip.version !== 6) throw new DomainValidationError(field, 'host', `${field}: ${host} is not an IPv6 address`);
    host = `[${formatIp(ip)}]`;
  } else if (/^[0-9.]+$/.test(host)) {
    if (!parseIp(host)) throw new DomainValidationError(field, 'host', `${field}: ${host} is not an IPv4 address`);
  } else {
    const labels = host.split('.');
    if (host.length > 253 || !labels.every((l) => LABEL.test(l))) {
      throw new DomainValidationError(field, 'host', `${field}: ${describeValue(host)} is not a host name (labels of letters, digits and inner hyphens)`);
    }
  }
  if (subdomains && (host.startsWith('[') || /^[0-9.]+$/.test(host) || !host.includes('.'))) {
    throw new DomainValidationError(field, 'wildcard', `${field}: "*." needs a domain of at least two labels after it (https://*.example.com)`);
  }
  const port = m[4] === undefined ? defaultPort(scheme) : Number(m[4]);
  if (port < 1 || port > 65535) throw new DomainValidationError(field, 'port', `${field}: port must be from 1 to 65535`);
  const text = `${scheme}://${subdomains ? '*.' : ''}${host}${port === defaultPort(scheme) ? '' : `:${port}`}`;
  return { scheme, host, subdomains, port, text };
}

/** A whole allow-list (an array of entries), deduplicated, in canonical spelling; errors name `field[i]`. */
export function parseHostRules(raw: unknown, field: string): HostRule[] {
  if (!Array.isArray(raw)) throw new DomainValidationError(field, 'type', `${field} must be an array of scheme://host[:port] strings`);
  if (raw.length > MAX_HOST_RULES) throw new DomainValidationError(field, 'too_many', `${field} may hold at most ${MAX_HOST_RULES} entries`);
  const seen = new Map<string, HostRule>();
  raw.forEach((entry, i) => {
    const rule = parseHostRule(entry, `${field}[${i}]`);
    seen.set(rule.text, rule);
  });
  return [...seen.values()];
}

export function hostRuleMatches(rule: HostRule, target: UrlTarget): boolean {
  if (rule.scheme !== target.scheme || rule.port !== target.port) return false;
  let host = target.host.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1); // example.com. is example.com
  if (host.startsWith('[')) {
    const ip = parseIp(host);
    host = ip ? `[${formatIp(ip)}]` : host;
  }
  return rule.subdomains ? host.endsWith(`.${rule.host}`) : host === rule.host;
}

/**
 * Whether a URL may be called: it must match an entry of the installation's list and one of the
 * tenant's (the intersection). Says which list refused it.
 */
export function outboundVerdict(target: UrlTarget, installation: readonly HostRule[], tenant: readonly HostRule[]): 'allowed' | 'installation' | 'tenant' {
  if (!installation.some((r) => hostRuleMatches(r, target))) return 'installation';
  if (!tenant.some((r) => hostRuleMatches(r, target))) return 'tenant';
  return 'allowed';
}
