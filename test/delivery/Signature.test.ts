import { describe, expect, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { sign, signatureFor } from "../../src/delivery/Signature.js"
import { encode, repoRoot } from "./support.js"

interface Vectors {
  readonly cases: ReadonlyArray<{ readonly secret: string; readonly body: string; readonly xSignature: string }>
}

// The vectors of the independent implementation (../shared/vectors), committed so that a clone
// anywhere runs them; where the shared folder is beside the checkout, the copy must still equal it.
const committedVectors = path.resolve(repoRoot, "test/fixtures/vectors/signature.json")
const sharedVectors = path.resolve(repoRoot, "../shared/vectors/signature.json")
const vectors: Vectors = JSON.parse(readFileSync(committedVectors, "utf8"))

describe("X-Signature (REFERENCE §4, vectors/signature.json)", () => {
  it.skipIf(!existsSync(sharedVectors))("the committed vectors are the shared ones", () => {
    expect(readFileSync(committedVectors, "utf8")).toBe(readFileSync(sharedVectors, "utf8"))
  })

  it("has cases to check", () => {
    expect(vectors.cases.length).toBe(3)
  })

  it.each(vectors.cases)("signs case with secret $secret", ({ body, secret, xSignature }) => {
    expect(sign(secret, encode(body))).toBe(xSignature)
    expect(signatureFor(secret, encode(body))).toBe(xSignature)
  })

  it("signs the bytes, not a string: a different encoding of the same text gives another signature", () => {
    const { body, secret, xSignature } = vectors.cases[1]!
    expect(sign(secret, Buffer.from(body, "latin1"))).not.toBe(xSignature)
  })

  it("treats an empty or missing secret as not set", () => {
    expect(signatureFor("", encode("{}"))).toBeUndefined()
    expect(signatureFor(undefined, encode("{}"))).toBeUndefined()
  })
})
