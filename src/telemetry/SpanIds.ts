import { randomFillSync } from "node:crypto"

// Random bytes drawn 4 KB at a time and written as hex by Node: a span's ids cost a slice of the pool, where drawing
// a hex digit (or 32 bits) at a time from Math.random was the largest telemetry item in the dispatcher's profile.
const pool = Buffer.allocUnsafe(4096)
let next = pool.length

const allZero = /^0+$/

/** `bytes` random bytes as lowercase hex; never all zeros, which W3C Trace Context and OTLP take as no id. */
const randomHex = (bytes: number): string => {
  for (;;) {
    if (next + bytes > pool.length) {
      randomFillSync(pool)
      next = 0
    }
    const id = pool.toString("hex", next, next += bytes)
    if (!allZero.test(id)) return id
  }
}

/** A new span id: 16 hex digits. */
export const newSpanId = (): string => randomHex(8)

/** A new trace id: 32 hex digits. */
export const newTraceId = (): string => randomHex(16)
