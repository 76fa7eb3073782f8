import type { HrTime } from '@opentelemetry/api';

const LEN = 2;
const encoder = new TextEncoder();

/**
 * Protocol Buffers wire format into one growing buffer, in a single pass: a length-delimited
 * field reserves one byte for its length and moves its content when it needs more (messages are
 * mostly under 128 bytes). The output is what OpenTelemetry's own ProtobufWriter writes, byte for
 * byte (tested in protobuf-batch-processor.spec.ts), without its size-estimating first pass.
 */
export class ProtoWriter {
  buf: Uint8Array;
  pos = 0;

  constructor(size = 4096) {
    this.buf = new Uint8Array(size);
  }

  /** The bytes written (a view: write no more). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** A varint of a whole number, negative ones as 64-bit two's complement (int64). */
  varint(value: number): void {
    this.room(10);
    const b = this.buf;
    if (value >= 0 && value <= 0xffffffff) {
      let v = value >>> 0;
      while (v > 0x7f) {
        b[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      b[this.pos++] = v;
      return;
    }
    const abs = Math.abs(value);
    let low = abs >>> 0;
    let high = (abs / 0x100000000) >>> 0;
    if (value < 0) {
      low = (~low + 1) >>> 0;
      high = (~high + (low === 0 ? 1 : 0)) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      b[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    b[this.pos++] = low;
  }

  fixed32(value: number): void {
    this.room(4);
    this.word(value >>> 0);
  }

  double(value: number): void {
    this.room(8);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).setFloat64(0, value, true);
    this.pos += 8;
  }

  /** An HrTime as fixed64 nanoseconds, split so no product passes 2^53 (seconds × 1e9 would). */
  hrTime(t: HrTime): void {
    this.room(8);
    const lowSecondsNs = (t[0] & 0xffff) * 1e9;
    const highSecondsNs = ((t[0] / 0x10000) >>> 0) * 1e9; // × 2^16 below
    const low = (lowSecondsNs >>> 0) + (((highSecondsNs & 0xffff) * 0x10000) >>> 0) + t[1];
    this.word(low >>> 0);
    this.word((Math.floor(lowSecondsNs / 0x100000000) + ((highSecondsNs / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0);
  }

  /** A length-delimited field of the bytes a hex string spells (trace and span ids). */
  hex(field: number, hex: string): void {
    this.tag(field, LEN);
    this.varint(hex.length >> 1);
    this.room(hex.length >> 1);
    const b = this.buf;
    for (let i = 0; i + 1 < hex.length; i += 2) b[this.pos++] = (nibble(hex.charCodeAt(i)) << 4) | nibble(hex.charCodeAt(i + 1));
  }

  bytes(value: Uint8Array): void {
    this.varint(value.length);
    this.raw(value);
  }

  /** Bytes already in wire format. */
  raw(value: Uint8Array): void {
    this.room(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /** A string's length and UTF-8 bytes: a short ASCII one copied as it is checked, any other encoded in place. */
  string(value: string): void {
    const n = value.length;
    if (n <= 127) { // a length of one byte
      this.room(n + 1);
      const b = this.buf;
      const start = this.pos;
      let i = 0;
      for (let c; i < n && (c = value.charCodeAt(i)) < 0x80; i++) b[start + 1 + i] = c;
      if (i === n) {
        b[start] = n;
        this.pos = start + 1 + n;
        return;
      }
    }
    const size = Buffer.byteLength(value, 'utf8'); // what TextEncoder writes, a lone surrogate as U+FFFD
    this.varint(size);
    this.room(size);
    encoder.encodeInto(value, this.buf.subarray(this.pos, this.pos + size));
    this.pos += size;
  }

  /** Opens a length-delimited field; `end` closes it with the position this returns. */
  begin(field: number): number {
    this.tag(field, LEN);
    this.room(1);
    return this.pos++;
  }

  end(at: number): void {
    const length = this.pos - at - 1;
    let size = 1;
    for (let v = length >>> 7; v > 0; v >>>= 7) size++;
    if (size > 1) {
      this.room(size - 1);
      this.buf.copyWithin(at + size, at + 1, this.pos);
      this.pos += size - 1;
    }
    let v = length;
    for (let i = at; i < at + size - 1; i++, v >>>= 7) this.buf[i] = (v & 0x7f) | 0x80;
    this.buf[at + size - 1] = v;
  }

  private word(v: number): void {
    const b = this.buf;
    b[this.pos++] = v & 0xff;
    b[this.pos++] = (v >>> 8) & 0xff;
    b[this.pos++] = (v >>> 16) & 0xff;
    b[this.pos++] = v >>> 24;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}

function nibble(c: number): number {
  return c <= 57 ? c - 48 : (c | 0x20) - 87; // '0'-'9', then 'a'-'f' either case
}
