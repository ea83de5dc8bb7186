import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, globSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import type { SourceConfig } from "../../src/domain/Settings.js"
import { makeSecretBox, SecretBox, type SecretKey } from "../../src/store/SecretBox.js"
import { loadDriver } from "../../src/store/sqlite/SqliteDriver.js"
import { layerPg, layerSqlite, type StoreServices } from "../../src/store/Store.js"
import { connectSql, databaseUrl } from "../support/postgres.js"

/** Secrets at rest (docs/SECURITY.md): one store on either backend, opened again and again with chosen keys. */

export interface StoredRow {
  readonly id: string
  readonly webhooks: string | null
  readonly destinations: string | null
}

export interface Backend {
  readonly name: string
  /** The store over the same database, its secrets sealed with `keys` (none: the library's default box). */
  readonly store: (
    keys?: ReadonlyArray<SecretKey>,
    decrypted?: Effect.Effect<void>
  ) => Layer.Layer<StoreServices, unknown>
  /** The sources' rows as stored. */
  readonly rows: () => Promise<ReadonlyArray<StoredRow>>
  /** Writes a source's columns directly, as an earlier build would have. */
  readonly writeRow: (row: StoredRow) => Promise<void>
  /** Every byte of the database: the SQLite files (with the WAL), or `pg_dump` of the schema. */
  readonly dump: () => string
  readonly close: () => Promise<void>
}

export const key = (id: string): SecretKey => ({ id, key: randomBytes(32) })

const withBox = (keys: ReadonlyArray<SecretKey> | undefined, decrypted: Effect.Effect<void> | undefined) =>
  keys === undefined ? Layer.empty : Layer.succeed(SecretBox)(makeSecretBox(keys, decrypted))

export const sqliteBackend = (): Backend => {
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-sealed-"))
  const filename = Path.join(directory, "hookrelay.db")
  const withDb = <A>(f: (db: InstanceType<ReturnType<typeof loadDriver>["Database"]>) => A): A => {
    const db = new (loadDriver().Database)(filename)
    try {
      return f(db)
    } finally {
      db.close()
    }
  }
  return {
    name: "SQLite",
    store: (keys, decrypted) => layerSqlite({ filename }).pipe(Layer.provide(withBox(keys, decrypted))),
    rows: () =>
      Promise.resolve(
        withDb((db) =>
          db.prepare("SELECT id, webhooks, destinations FROM sources ORDER BY id").all() as Array<StoredRow>
        )
      ),
    writeRow: (row) =>
      Promise.resolve(withDb((db) => {
        db.prepare("UPDATE sources SET webhooks = ?, destinations = ? WHERE id = ?").run(
          row.webhooks,
          row.destinations,
          row.id
        )
      })),
    dump: () =>
      globSync(`${filename}*`).filter(existsSync).map((file) => readFileSync(file).toString("latin1")).join("\n"),
    close: () => Promise.resolve(rmSync(directory, { recursive: true, force: true }))
  }
}

const pgDump = (): string => {
  const found = globSync("/usr/lib/postgresql/*/bin/pg_dump").sort().at(-1)
  return found ?? "pg_dump"
}

export const pgBackend = async (): Promise<Backend> => {
  const schema = `sealed_${randomBytes(5).toString("hex")}`
  const sql = await connectSql(databaseUrl)
  return {
    name: "PostgreSQL",
    store: (keys, decrypted) =>
      layerPg({ url: databaseUrl, schema, maxConnections: 4 }).pipe(Layer.provide(withBox(keys, decrypted))),
    rows: async () =>
      (await sql.query<StoredRow>(`SELECT id, webhooks, destinations FROM ${schema}.sources ORDER BY id`)).rows,
    writeRow: async (row) => {
      await sql.query(`UPDATE ${schema}.sources SET webhooks = $1, destinations = $2 WHERE id = $3`, [
        row.webhooks,
        row.destinations,
        row.id
      ])
    },
    dump: () => execFileSync(pgDump(), ["--dbname", databaseUrl, "--schema", schema], { encoding: "latin1" }),
    close: async () => {
      await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await sql.end()
    }
  }
}

/** Runs `effect` over a store built (and closed) just for it. */
export const withStore = <A, E>(
  layer: Layer.Layer<StoreServices, unknown>,
  effect: Effect.Effect<A, E, StoreServices>
) => Effect.runPromise(Effect.scoped(Effect.provide(effect, layer)))

/** The failure of building `layer`, as it would end a start. */
export const openFailure = (layer: Layer.Layer<StoreServices, unknown>) =>
  Effect.runPromise(Effect.flip(Effect.scoped(Layer.build(layer))))

const whsec = () => `whsec_${randomBytes(32).toString("base64")}`

/** A source holding one of every kind of secret, in both columns (the destination `webhooks` and another). */
export const secretSource = (url = "http://127.0.0.1:9/hook") => {
  const secrets = {
    shared: `shared-${randomBytes(12).toString("hex")}`,
    current: whsec(),
    rotated: whsec(),
    other: whsec(),
    privateKey: `whsk_${randomBytes(32).toString("base64")}`,
    token: `Bearer tok_${randomBytes(16).toString("hex")}`,
    otherToken: `tok2_${randomBytes(16).toString("hex")}`
  }
  const source: SourceConfig = {
    id: "sealed",
    writeKey: "wk_sealed_0123456789abcdef",
    webhooks: {
      enabled: true,
      endpoints: [{ url, headers: { Authorization: secrets.token } }],
      sharedSecret: secrets.shared,
      signing: "both",
      signingSecrets: [
        { secret: secrets.current, id: "one", createdAt: "2026-01-01T00:00:00Z" },
        { secret: secrets.rotated, id: "two", createdAt: "2025-01-01T00:00:00Z", expiresAt: "2099-01-01T00:00:00Z" }
      ],
      asymmetric: true,
      signingKey: secrets.privateKey
    },
    destinations: [{
      id: "second",
      enabled: true,
      endpoints: [{ url, headers: { "X-Token": secrets.otherToken } }],
      signing: "standard",
      signingSecrets: [{ secret: secrets.other, id: "three", createdAt: "2026-01-01T00:00:00Z" }]
    }]
  }
  return { source, secrets, values: Object.values(secrets) }
}

/** The forms in which a value could leak: as it is, in base64 and base64url, and the key bytes of whsec_/whsk_. */
export const leakForms = (value: string): ReadonlyArray<string> => {
  const forms = [value, Buffer.from(value).toString("base64"), Buffer.from(value).toString("base64url")]
  const prefixed = /^(whsec_|whsk_)(.+)$/.exec(value)
  if (prefixed !== null) {
    const bytes = Buffer.from(prefixed[2]!, "base64")
    forms.push(prefixed[2]!, bytes.toString("base64url"), bytes.toString("hex"), bytes.toString("latin1"))
  }
  // Without padding: a value inside a longer base64 text ends without it.
  return forms.map((form) => form.replace(/=+$/, ""))
}

/** The values of `values` found in `dump` in any of their forms. */
export const leaked = (dump: string, values: ReadonlyArray<string>): ReadonlyArray<string> =>
  values.filter((value) => leakForms(value).some((form) => dump.includes(form)))
