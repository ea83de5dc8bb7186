import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, Option, Result } from "effect"
import type { SourceConfig } from "../../src/domain/Settings.js"
import { isSealed, sealedPrefix, secretKeysProblem } from "../../src/store/SecretBox.js"
import { Sources } from "../../src/store/Sources.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import {
  type Backend,
  key,
  leaked,
  openFailure,
  pgBackend,
  secretSource,
  sqliteBackend,
  withStore
} from "./secretsAtRestSupport.js"

/**
 * Secrets at rest (docs/SECURITY.md), on both stores: what a database dump holds, key rotation and re-keying, a wrong
 * or missing key refusing the open without writing, plain values of an earlier build sealed at the first open, and
 * decryption once per stored value.
 */

const skipPg = skipUnlessCi("the PostgreSQL secrets-at-rest tests", await postgresUnavailable())

const put = (source: SourceConfig) => Effect.flatMap(Sources, (sources) => sources.upsertSource(source, 1))
const get = (id: string) =>
  Effect.flatMap(Sources, (sources) => sources.getSource(id)).pipe(Effect.map(Option.getOrThrow))
const sealAll = Effect.flatMap(Sources, (sources) => sources.sealSecrets("all"))

/** The source as the store reads it back, to compare with what was written. */
const settingsOf = (source: { readonly webhooks?: unknown; readonly destinations: ReadonlyArray<unknown> }) =>
  JSON.parse(JSON.stringify({ webhooks: source.webhooks, destinations: source.destinations }))

const suite = (name: string, open: () => Promise<Backend>, skip = false) =>
  describe.skipIf(skip)(`secrets at rest (${name})`, { timeout: 60_000 }, () => {
    let backend: Backend | undefined
    const fresh = async () => (backend = await open())
    afterEach(async () => {
      await backend?.close()
      backend = undefined
    })

    it("a dump holds none of the secrets, private keys or header values; reads give them back", async () => {
      const store = await fresh()
      const a = key("a")
      const { source, values } = secretSource()
      const written = await withStore(store.store([a]), put(source))
      // While the store is open: the WAL holds the latest writes.
      const read = await withStore(
        store.store([a]),
        Effect.gen(function*() {
          const dump = store.dump()
          expect(leaked(dump, values)).toEqual([])
          return yield* get("sealed")
        })
      )
      expect(settingsOf(read)).toEqual(settingsOf(written))
      expect(read.webhooks?.sharedSecret).toBe(source.webhooks?.sharedSecret)
      expect(read.webhooks?.endpoints[0]?.headers).toEqual(source.webhooks?.endpoints[0]?.headers)
      expect(leaked(store.dump(), values)).toEqual([])
      const rows = await store.rows()
      expect(rows[0]!.webhooks).toContain(`"sharedSecret":"${sealedPrefix}a:`)
      expect(rows[0]!.destinations).toContain(`"X-Token":"${sealedPrefix}a:`)
      // What is not a secret stays readable: the URL, the signing scheme.
      expect(rows[0]!.webhooks).toContain("http://127.0.0.1:9/hook")
    })

    it("rotates: written with A, opened with B,A, re-keyed, then opened with B alone", async () => {
      const store = await fresh()
      const a = key("a")
      const b = key("b")
      const { source, values } = secretSource()
      const written = await withStore(store.store([a]), put(source))
      const report = await withStore(
        store.store([b, a]),
        Effect.gen(function*() {
          expect(settingsOf(yield* get("sealed"))).toEqual(settingsOf(written))
          return yield* sealAll
        })
      )
      expect(report.sealed).toBe(values.length)
      for (const row of await store.rows()) {
        expect(`${row.webhooks}${row.destinations}`).not.toContain(`${sealedPrefix}a:`)
      }
      const read = await withStore(store.store([b]), get("sealed"))
      expect(settingsOf(read)).toEqual(settingsOf(written))
      expect(leaked(store.dump(), values)).toEqual([])
      // A, retired, opens nothing any more.
      expect(secretKeysProblem(await openFailure(store.store([a])))).toContain(`"b"`)
    })

    it("a wrong key, an unknown key id, or no key refuses the open and writes nothing", async () => {
      const store = await fresh()
      const a = key("a")
      await withStore(store.store([a]), put(secretSource().source))
      const before = await store.rows()
      const wrongBytes = key("a")
      const cases = [[wrongBytes], [key("c")], [key("c"), wrongBytes], undefined] as const
      const problems: Array<string | undefined> = []
      for (const keys of cases) {
        problems.push(secretKeysProblem(await openFailure(store.store(keys))))
        expect(await store.rows()).toEqual(before)
      }
      expect(problems[0]).toMatch(/^source "sealed": a stored secret does not open with key "a"/)
      expect(problems[1]).toMatch(/^source "sealed": .*sealed with key "a", which HOOKRELAY_SECRET_KEYS does not hold/)
      expect(problems[2]).toContain(`does not open with key "a"`)
      expect(problems[3]).toContain("HOOKRELAY_SECRET_KEYS is not set")
      for (const problem of problems) expect(problem).not.toContain("\n")
      // The right key still opens it.
      await withStore(store.store([a]), get("sealed"))
    })

    it("seals the plain values an earlier build wrote, at the first open with a key", async () => {
      const store = await fresh()
      const { source, values } = secretSource()
      // The library's default box has no key: values are written as an earlier build wrote them.
      const written = await withStore(store.store(), put(source))
      expect(leaked(store.dump(), values).length).toBe(values.length)
      // And as JSON written directly: a plain header value in a destination an earlier build stored.
      const [row] = await store.rows()
      await store.writeRow({
        ...row!,
        destinations: row!.destinations!.replace(/"X-Token":"[^"]*"/, `"X-Token":"direct-plain-token"`)
      })
      const a = key("a")
      const read = await withStore(store.store([a]), get("sealed"))
      expect(read.destinations[1]?.endpoints[0]?.headers).toEqual({ "X-Token": "direct-plain-token" })
      expect(settingsOf(read).webhooks).toEqual(settingsOf(written).webhooks)
      expect(leaked(store.dump(), [...values, "direct-plain-token"])).toEqual([])
      const sealed = await store.rows()
      expect(sealed[0]!.webhooks).toContain(`${sealedPrefix}a:`)
      // A second open has nothing left to seal: the rows stay as they are.
      await withStore(store.store([a]), get("sealed"))
      expect(await store.rows()).toEqual(sealed)
    })

    it("decrypts each stored value once, however often it is read; again only when the settings change", async () => {
      const store = await fresh()
      const a = key("a")
      let decryptions = 0
      const counted = Effect.sync(() => void (decryptions += 1))
      const { source, values } = secretSource()
      await withStore(store.store([a]), put(source))
      const counts = await withStore(
        store.store([a], counted),
        Effect.gen(function*() {
          const atOpen = decryptions
          for (let read = 0; read < 1000; read += 1) yield* get("sealed")
          const afterReads = decryptions
          const sources = yield* Sources
          yield* sources.changeDestinations(
            "sealed",
            2,
            (current) => Result.succeed(current.map((destination) => ({ ...destination, name: "renamed" })))
          )
          for (let read = 0; read < 1000; read += 1) {
            yield* get("sealed")
          }
          return { atOpen, afterReads, afterChange: decryptions }
        })
      )
      // The open checks every sealed value (one decryption each); the 1,000 reads decrypt nothing more.
      expect(counts.atOpen).toBe(values.length)
      expect(counts.afterReads).toBe(values.length)
      // The change sealed every value again (fresh nonces): each new value is decrypted once.
      expect(counts.afterChange).toBe(2 * values.length)
      for (const row of await store.rows()) {
        for (const value of [row.webhooks, row.destinations]) {
          if (value !== null) expect(isSealed(JSON.parse(value).sharedSecret ?? sealedPrefix)).toBe(true)
        }
      }
    })
  })

suite("SQLite", () => Promise.resolve(sqliteBackend()))
suite("PostgreSQL", pgBackend, skipPg)
