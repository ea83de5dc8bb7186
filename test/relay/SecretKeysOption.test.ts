import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { layerSqlite, RelaySources } from "../../src/index.js"

const sharedSecret = "library-shared-secret-0123456789abcdef"
const keyText = (id: string) => `${id}:${randomBytes(32).toString("base64")}`

/** Every file of the store's directory (the database, its WAL), as text: where a secret would show. */
const storedText = (directory: string) =>
  readdirSync(directory).map((name) => readFileSync(Path.join(directory, name)).toString("latin1")).join("\n")

const saveAndRead = (directory: string, secretKeys: string | undefined) =>
  Effect.gen(function*() {
    const sources = yield* RelaySources
    yield* sources.putSource({
      id: "lib",
      writeKey: "wk_library_0123456789",
      webhooks: { enabled: true, sharedSecret, endpoints: [{ url: "https://example.com/hook" }] }
    })
    return yield* sources.getSource("lib")
  }).pipe(Effect.provide(layerSqlite({ directory, dispatcher: false, secretKeys })))

describe("the library's engine layers and `secretKeys`", () => {
  it.effect("with keys, the stored secrets are sealed and read back; keys that do not parse fail the layer", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-secret-keys-"))
      try {
        const keys = keyText("lib1")
        const source = yield* saveAndRead(directory, keys)
        expect(source.webhooks?.sharedSecret).toBe(sharedSecret)
        expect(storedText(directory)).not.toContain(sharedSecret)
        expect(storedText(directory)).toContain("hrenc:v1:lib1:")

        // Another key cannot open them: the layer fails, nothing is overwritten.
        const before = storedText(directory)
        const wrong = yield* Effect.exit(saveAndRead(directory, keyText("lib2")))
        expect(Exit.isFailure(wrong)).toBe(true)
        expect(storedText(directory).includes("hrenc:v1:lib2:")).toBe(false)
        expect(before).toContain("hrenc:v1:lib1:")

        const malformed = yield* Effect.exit(
          Layer.build(layerSqlite({ directory, dispatcher: false, secretKeys: "no-colon" })).pipe(Effect.scoped)
        )
        expect(Exit.isFailure(malformed)).toBe(true)
        expect(String(Exit.isFailure(malformed) ? malformed.cause : "")).toContain("secretKeys")
      } finally {
        rmSync(directory, { recursive: true, force: true })
      }
    }))

  it.effect("without keys, the library stores secrets as given (the server always seals)", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-secret-keys-"))
      try {
        const source = yield* saveAndRead(directory, undefined)
        expect(source.webhooks?.sharedSecret).toBe(sharedSecret)
        expect(storedText(directory)).not.toContain("hrenc:v1:")
      } finally {
        rmSync(directory, { recursive: true, force: true })
      }
    }))
})
