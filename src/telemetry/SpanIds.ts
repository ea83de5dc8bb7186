import { randomFillSync } from "node:crypto"

// Random bytes drawn 4 KB at a time and turned into hex by Node in one call: an id is a slice of that text. Drawing
// from Math.random was the largest telemetry item of the dispatcher's profile; a hex conversion per id cost about
// three times what the slice does (`bench/NOTES.md`).
const pool = Buffer.allocUnsafe(4096)
let hex = ""
let next = 0

const allZero = /^0+$/

/** `digits` random lowercase hex digits; never all zeros, which W3C Trace Context and OTLP take as no id. */
const randomHex = (digits: number): string => {
  for (;;) {
    if (next + digits > hex.length) {
      randomFillSync(pool)
      hex = pool.toString("hex")
      next = 0
    }
    const id = hex.slice(next, next += digits)
    if (!allZero.test(id)) return id
  }
}

/** A new span id: 16 hex digits. */
export const newSpanId = (): string => randomHex(16)

/** A new trace id: 32 hex digits. */
export const newTraceId = (): string => randomHex(32)
