/**
 * IP addresses and CIDR ranges as bytes, pure (no `node:net`): parsing, containment and RFC 5952
 * spelling. The `http` kind's outbound rules and the API's per-source limits (an IPv6 /64 is one
 * source) are written over them.
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
