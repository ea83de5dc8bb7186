/**
 * An export body's bytes, written in place into one buffer that grows as needed, with protobuf's wire format
 * (https://protobuf.dev/programming-guides/encoding/) for `SpanProtobuf`. `start` leaves room before the first byte
 * written, for a head prefixed once the body's length is known (`prepend`).
 */
export class BodyWriter {
  bytes: Buffer
  length: number
  constructor(bytes: Buffer, readonly start: number) {
    this.bytes = bytes
    this.length = start
  }

  /** Room for `needed` more bytes. */
  reserve(needed: number) {
    if (this.length + needed <= this.bytes.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + needed))
    this.bytes.copy(grown, 0, 0, this.length)
    this.bytes = grown
  }

  /** `text` in UTF-8. */
  text(text: string) {
    // At most three bytes a UTF-16 unit; the exact count only when that bound does not fit.
    this.reserve(this.length + text.length * 3 <= this.bytes.length ? text.length * 3 : Buffer.byteLength(text))
    this.length += this.bytes.write(text, this.length)
  }

  raw(chunk: Uint8Array) {
    this.reserve(chunk.length)
    this.bytes.set(chunk, this.length)
    this.length += chunk.length
  }

  /** A non-negative integer up to 2^53 as a varint; the caller has reserved its (at most 8) bytes. */
  varint(value: number) {
    const bytes = this.bytes
    while (value >= 0x80) {
      bytes[this.length++] = (value & 0x7f) | 0x80
      value = Math.floor(value / 128)
    }
    bytes[this.length++] = value
  }

  tag(field: number, wireType: WireType) {
    this.reserve(8)
    this.varint(field * 8 + wireType)
  }

  /** The tag and length of a length-delimited field whose `size` bytes follow. */
  lengthDelimited(field: number, size: number) {
    this.tag(field, lenType)
    this.varint(size)
  }

  /** An `int64` (a `uint64` as well below 2^63): a negative one takes ten bytes, as two's complement. */
  int64(field: number, value: number | bigint) {
    this.tag(field, varintType)
    if (typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER) return this.varint(value)
    let rest = BigInt.asUintN(64, BigInt(value))
    this.reserve(10)
    while (rest >= 0x80n) {
      this.bytes[this.length++] = Number(rest & 0x7fn) | 0x80
      rest >>= 7n
    }
    this.bytes[this.length++] = Number(rest)
  }

  /** A `fixed64` from a time in nanoseconds (0 to 2^64 - 1). */
  fixed64(field: number, value: bigint) {
    this.tag(field, fixed64Type)
    this.reserve(8)
    // Stored into a 64-bit array and copied as bytes: any BigInt arithmetic would allocate.
    scratch64[0] = value
    const bytes = this.bytes
    for (let i = 0; i < 8; i++) bytes[this.length++] = scratchBytes[littleEndian ? i : 7 - i]!
  }

  double(field: number, value: number) {
    this.tag(field, fixed64Type)
    this.reserve(8)
    this.length = this.bytes.writeDoubleLE(value, this.length)
  }

  string(field: number, value: string) {
    this.tag(field, lenType)
    const most = value.length * 3
    this.reserve(most + 8)
    if (value.length < shortText && this.ascii(value)) return
    const prefix = varintSize(value.length)
    if (prefix === varintSize(most)) {
      // The length's own size is known before the text is written: no count of its bytes first.
      const written = this.bytes.write(value, this.length + prefix)
      this.varint(written)
      this.length += written
      return
    }
    const size = Buffer.byteLength(value)
    this.varint(size)
    this.length += this.bytes.write(value, this.length)
  }

  /**
   * A short text's length and bytes when it is all ASCII, copied here: a call into Node's encoder costs more than the
   * copy for the texts spans hold. False, having written nothing that counts, at the first other character.
   */
  private ascii(value: string): boolean {
    const bytes = this.bytes
    const start = this.length + 1
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i)
      if (code >= 0x80) return false
      bytes[start + i] = code
    }
    bytes[this.length] = value.length
    this.length = start + value.length
    return true
  }

  /** `hex` (hex digits, an even count: an id) as bytes, for a field numbered below 16. */
  hexBytes(field: number, hex: string) {
    const size = hex.length >> 1
    this.reserve(size + 10)
    this.bytes[this.length++] = field * 8 + lenType
    this.varint(size)
    const bytes = this.bytes
    let at = this.length
    // In JavaScript, by a table: Node's hex decoder is a call into C++ that costs more than the 8 or 16 bytes of an id.
    for (let i = 0; i < hex.length; i += 2) {
      bytes[at++] = (hexValues[hex.charCodeAt(i)]! << 4) | hexValues[hex.charCodeAt(i + 1)]!
    }
    this.length = at
  }

  /** Opens an embedded message (or any length-delimited field): what is written until `close` is its content. */
  open(field: number): number {
    this.tag(field, lenType)
    // Room for a length of up to 2^21 - 1; `close` moves the content when its length takes another size.
    this.reserve(openRoom)
    this.length += openRoom
    return this.length
  }

  close(contentStart: number) {
    const size = this.length - contentStart
    const prefix = varintSize(size)
    const at = contentStart - openRoom
    if (prefix !== openRoom) {
      this.reserve(prefix - openRoom)
      this.bytes.copyWithin(at + prefix, contentStart, this.length)
      this.length += prefix - openRoom
    }
    const end = this.length
    this.length = at
    this.varint(size)
    this.length = end
  }

  /**
   * Writes `head` just before `start` and gives the body from there: `head` must fit in the room `start` left.
   */
  prepend(head: Uint8Array): Buffer {
    const from = this.start - head.length
    this.bytes.set(head, from)
    return this.bytes.subarray(from, this.length)
  }
}

/** What `write` writes, as bytes of their own: the constant parts of bodies, encoded once. */
export const encodedOnce = (write: (writer: BodyWriter) => void): Buffer => {
  const writer = new BodyWriter(Buffer.allocUnsafe(256), 0)
  write(writer)
  return Buffer.from(writer.bytes.subarray(0, writer.length))
}

/** How a field's value is laid out: the low three bits of its tag. */
export type WireType = typeof varintType | typeof fixed64Type | typeof lenType
const varintType = 0
const fixed64Type = 1
const lenType = 2

const openRoom = 3

/** Texts shorter than this are copied by `ascii`; their length is one byte. */
const shortText = 128

const scratch64 = new BigUint64Array(1)
const scratchBytes = new Uint8Array(scratch64.buffer)
// fixed64 is little-endian on the wire; the array is in the machine's order (big-endian on s390x).
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/** A hex digit's value by its character code. */
const hexValues = new Uint8Array(128)
for (let digit = 0; digit < 16; digit++) {
  hexValues[digit.toString(16).charCodeAt(0)] = digit
  hexValues[digit.toString(16).toUpperCase().charCodeAt(0)] = digit
}

/** The bytes `value` (non-negative, up to 2^53) takes as a varint. */
export const varintSize = (value: number): number => {
  let size = 1
  while (value >= 0x80) {
    value = Math.floor(value / 128)
    size += 1
  }
  return size
}
