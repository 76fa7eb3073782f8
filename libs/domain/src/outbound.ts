import { describeValue, DomainValidationError } from './errors';
import { type Cidr, cidrContains, formatIp, type IpAddress, parseCidr, parseIp } from './ip-address';

/**
 * Rules for the `http` kind's outbound calls (issue 16), pure: which URLs a tenant may call
 * (allow-list entries) and which IP addresses may be connected to (ip-address.ts).
 * The worker applies them after DNS, on the address it then connects to.
 */

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
  // AWS's credential endpoints beside it: ECS tasks (169.254.170.2), EKS Pod Identity (169.254.170.23, fd00:ec2::23).
  ['169.254.170.2/32', 'metadata'],
  ['169.254.170.23/32', 'metadata'],
  ['fd00:ec2::23/128', 'metadata'],
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
const METADATA_CIDRS = REFUSED_CIDRS.filter(([, why]) => why === 'metadata').map(([c]) => c);
const NAT64 = parseCidr('64:ff9b::/96')!;
const SIX_TO_FOUR = parseCidr('2002::/16')!;

/** The IPv4 address inside a NAT64 or 6to4 address, else null. */
function embeddedIpv4(ip: IpAddress): IpAddress | null {
  if (ip.version !== 6) return null;
  const bytes = cidrContains(NAT64, ip) ? ip.bytes.slice(12) : cidrContains(SIX_TO_FOUR, ip) ? ip.bytes.slice(2, 6) : null;
  return bytes ? { version: 4, bytes } : null;
}

/**
 * A cloud metadata address that `allowed` does not name exactly (its own /32 or /128): a broad
 * allowed range (an internal fd00::/8, a node-local 169.254.0.0/16) let every tenant whose DNS
 * name the operator allowed reach the metadata service inside it.
 */
function unallowedMetadata(ip: IpAddress, allowed: readonly Cidr[]): boolean {
  const metadata = METADATA_CIDRS.find((m) => cidrContains(m, ip));
  return metadata !== undefined && !allowed.some((c) => c.text === metadata.text);
}

/**
 * Why `address` must not be connected to ('loopback', 'private', 'link-local', 'metadata', …),
 * or null when it may. An address inside one of `allowed` (the operator's explicit CIDRs) may,
 * unless it is a cloud metadata address that `allowed` does not name exactly (unallowedMetadata);
 * IPv4-mapped IPv6 is judged as its IPv4 address, and the IPv4 address inside NAT64 and 6to4
 * addresses is judged too. Anything that does not parse is refused.
 */
export function refusedRange(address: string | IpAddress, allowed: readonly Cidr[] = []): string | null {
  const parsed = typeof address === 'string' ? parseIp(address) : address;
  if (!parsed) return 'unparsable';
  const ip = unmapped(parsed);
  const embedded = embeddedIpv4(ip);
  if (unallowedMetadata(ip, allowed)) return 'metadata';
  if (embedded && unallowedMetadata(embedded, allowed)) return 'metadata (inside an IPv6 address)';
  if (allowed.some((c) => cidrContains(c, ip) || cidrContains(c, parsed))) return null;
  if (embedded) {
    const inner = refusedRange(embedded, allowed);
    if (inner) return `${inner} (inside an IPv6 address)`;
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
