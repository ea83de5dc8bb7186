import { randomFillSync } from "node:crypto"

/**
 * Random bytes are drawn 4 KiB at a time (as Node's own `randomUUID` does), and each id's text is
 * written into a scratch buffer and read out as one string: one `randomBytes(16)` per id, then a
 * hex string cut in five, cost time and garbage per id that made up most of an audience sync's id
 * generation. Every id still gets fresh bytes from the CSPRNG;
 * no byte is used twice.
 */
const poolSize = 4096
const pool = Buffer.alloc(poolSize)
let poolOffset = poolSize

const hexDigits = Buffer.from("0123456789abcdef", "latin1")
const text = Buffer.alloc(36)
/** Where each of the 16 bytes' two hex digits go in `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. */
const positions = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
for (const dash of [8, 13, 18, 23]) text[dash] = 0x2d

/**
 * A UUID version 7 (RFC 9562): 48 bits of the creation millisecond, then random bits. Ids made
 * close in time sort together, so the store inserts them at the right edge of its indexes instead
 * of at random pages (random v4 ids cost more per ingested message on SQLite; bench/NOTES.md,
 * "The message id log and the edge rule").
 */
export const uuidv7 = (epochMillis: number): string => {
  if (poolOffset + 16 > poolSize) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const at = poolOffset
  poolOffset += 16
  const millis = Math.max(0, Math.floor(epochMillis))
  pool[at] = Math.floor(millis / 2 ** 40) & 0xff
  pool[at + 1] = Math.floor(millis / 2 ** 32) & 0xff
  pool[at + 2] = (millis >>> 24) & 0xff
  pool[at + 3] = (millis >>> 16) & 0xff
  pool[at + 4] = (millis >>> 8) & 0xff
  pool[at + 5] = millis & 0xff
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x70
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80
  for (let i = 0; i < 16; i++) {
    const byte = pool[at + i]!
    text[positions[i]!] = hexDigits[byte >>> 4]!
    text[positions[i]! + 1] = hexDigits[byte & 0x0f]!
  }
  return text.toString("latin1", 0, 36)
}
