import { describe, expect, it } from "@effect/vitest"
import { createPublicKey, verify } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { Webhook } from "standardwebhooks"
import {
  decodeSecret,
  generateSecret,
  generateSigningKeyPair,
  publicKeyPrefix,
  signV1,
  signV1a
} from "../../src/delivery/StandardWebhooks.js"
import { encode, repoRoot } from "./support.js"

interface Vectors {
  readonly cases: ReadonlyArray<{
    readonly secret: string
    readonly id: string
    readonly timestamp: number
    readonly body: string
    readonly signature: string
  }>
}

// The spec's own example and a UTF-8 case, committed so that a clone anywhere runs them.
const committedVectors = path.resolve(repoRoot, "test/fixtures/vectors/standard-webhooks.json")
const sharedVectors = path.resolve(repoRoot, "../shared/vectors/standard-webhooks.json")
const vectors: Vectors = JSON.parse(readFileSync(committedVectors, "utf8"))

const keyOf = (secret: string): Uint8Array => {
  const key = decodeSecret(secret)
  if (typeof key === "string") throw new Error(key)
  return key
}

describe("Standard Webhooks signatures", () => {
  it.skipIf(!existsSync(sharedVectors))("the committed vectors are the shared ones", () => {
    expect(readFileSync(committedVectors, "utf8")).toBe(readFileSync(sharedVectors, "utf8"))
  })

  it.each(vectors.cases)("produces the published signature for id $id byte for byte", (vector) => {
    expect(signV1(keyOf(vector.secret), vector.id, vector.timestamp, encode(vector.body))).toBe(vector.signature)
  })

  it("is verified by the reference implementation", () => {
    const secret = generateSecret()
    const body = "{\"type\":\"track\",\"event\":\"Signed\"}"
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = {
      "webhook-id": "job-1",
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signV1(keyOf(secret), "job-1", timestamp, encode(body))
    }
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body))
    expect(() => new Webhook(secret).verify(body.replace("Signed", "Tampered"), headers)).toThrow()
  })

  it("refuses secrets that are not whsec_ base64 of 24 to 64 bytes", () => {
    expect(decodeSecret("secret")).toMatch(/must start with "whsec_"/)
    expect(decodeSecret("whsec_not base64!")).toMatch(/base64/)
    expect(decodeSecret("whsec_" + Buffer.alloc(16).toString("base64"))).toMatch(
      /24 to 64 bytes after "whsec_" \(got 16\)/
    )
    expect(decodeSecret("whsec_" + Buffer.alloc(65).toString("base64"))).toMatch(/got 65/)
    expect(keyOf(generateSecret())).toHaveLength(32)
  })

  it("signs v1a with ed25519: the public key alone verifies, a tampered body fails", () => {
    const { privateKey, publicKey } = generateSigningKeyPair()
    expect(publicKey.startsWith(publicKeyPrefix)).toBe(true)
    const body = encode("{\"event\":\"Signed\"}")
    const signature = signV1a(privateKey, "job-2", 1_800_000_000, body)
    expect(signature.startsWith("v1a,")).toBe(true)
    const raw = Buffer.from(publicKey.slice(publicKeyPrefix.length), "base64")
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" })
    const content = (text: string) => Buffer.from(`job-2.1800000000.${text}`)
    const bytes = Buffer.from(signature.slice(4), "base64")
    expect(verify(null, content("{\"event\":\"Signed\"}"), key, bytes)).toBe(true)
    expect(verify(null, content("{\"event\":\"Tampered\"}"), key, bytes)).toBe(false)
  })
})
