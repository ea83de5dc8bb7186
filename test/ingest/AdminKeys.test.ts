import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as Path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { layerPg } from "../../src/store/Store.js"
import { type App, startApp } from "../support/app.js"
import { bearer, call } from "../support/http.js"
import { connectSql, databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { createKey, putSource } from "./adminKeysSupport.js"

/** API keys and the audit log of the admin API (REFERENCE §7c), over real HTTP against the whole server. */

const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The rows of a table of the app's SQLite file, read beside the running server. */
const rows = (app: App, sql: string): Array<Record<string, unknown>> => {
  const db = new DatabaseSync(Path.join(app.directory, "hookrelay.db"), { readOnly: true })
  try {
    return db.prepare(sql).all()
  } finally {
    db.close()
  }
}

describe("admin API: keys", () => {
  it.live("a key is shown once, stored as its hash, listed without it, knows itself, and is refused once revoked", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      yield* putSource(app, "web")
      const created = yield* call(app.baseUrl, "POST", "/admin/keys", {
        body: { name: "  ci deploys ", scopes: ["sources:read", "sources:write"], sourceIds: ["web"] }
      })
      expect(created.status).toBe(201)
      const key = created.body.key as string
      expect(key).toMatch(/^hrk_[A-Za-z0-9_-]{43}$/)
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^key_/),
        name: "ci deploys",
        scopes: ["sources:read", "sources:write"],
        sourceIds: ["web"],
        createdAt: expect.stringMatching(isoWithMillis),
        lastUsedAt: null,
        revokedAt: null
      })
      const other = yield* createKey(app, { name: "reader", scopes: ["sources:read"] })
      expect(other.key).not.toBe(key)

      // The database holds the hash, never the key.
      const stored = rows(app, "SELECT * FROM api_keys")
      expect(stored).toHaveLength(2)
      expect(JSON.stringify(stored)).not.toContain(key.slice(4))
      const hash = createHash("sha256").update(key).digest("hex")
      expect(stored.find((row) => row.id === created.body.id)?.key_hash).toBe(hash)

      const list = yield* call(app.baseUrl, "GET", "/admin/keys")
      expect(list.status).toBe(200)
      expect(list.text).not.toContain(key)
      expect(list.text).not.toContain(hash)
      expect(list.body.keys.map((k: { name: string }) => k.name)).toStrictEqual(["reader", "ci deploys"])
      expect(Object.keys(list.body.keys[0]).sort()).toStrictEqual(
        ["createdAt", "id", "lastUsedAt", "name", "revokedAt", "scopes", "sourceIds"]
      )

      // The key works, and its use is noted.
      const self = yield* call(app.baseUrl, "GET", "/admin/keys/self", { authorization: bearer(key) })
      expect(self).toMatchObject({
        status: 200,
        body: { id: created.body.id, name: "ci deploys", scopes: ["sources:read", "sources:write"], sourceIds: ["web"] }
      })
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/web", { authorization: bearer(key) })).status).toBe(200)
      const used = (yield* call(app.baseUrl, "GET", "/admin/keys")).body.keys.find((k: { id: string }) =>
        k.id === created.body.id
      )
      expect(used.lastUsedAt).toMatch(isoWithMillis)
      expect(Date.now() - Date.parse(used.lastUsedAt)).toBeLessThan(10_000)
      const bootstrap = yield* call(app.baseUrl, "GET", "/admin/keys/self")
      expect(bootstrap.body).toStrictEqual({ id: null, name: "admin token", scopes: ["admin"], sourceIds: null })

      // Revoked: 401 from the next request on, and listed as revoked.
      expect((yield* call(app.baseUrl, "DELETE", `/admin/keys/${created.body.id}`)).status).toBe(204)
      for (const path of ["/admin/keys/self", "/admin/sources/web"]) {
        const refused = yield* call(app.baseUrl, "GET", path, { authorization: bearer(key) })
        expect(refused.status).toBe(401)
        expect(refused.body.code).toBe("unauthorized")
      }
      const revoked = (yield* call(app.baseUrl, "GET", "/admin/keys")).body.keys.find((k: { id: string }) =>
        k.id === created.body.id
      )
      expect(revoked.revokedAt).toMatch(isoWithMillis)
      expect((yield* call(app.baseUrl, "DELETE", "/admin/keys/key_nope")).status).toBe(404)
      expect((yield* call(app.baseUrl, "GET", "/admin/keys/self", { authorization: other.authorization })).status)
        .toBe(200)
      // A key that was never issued, even with the prefix, is 401.
      const forged = yield* call(app.baseUrl, "GET", "/admin/keys/self", {
        authorization: bearer(`hrk_${"A".repeat(43)}`)
      })
      expect(forged.status).toBe(401)
    }))

  it.live("bad key requests are 400 naming the field; only admin makes keys", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      yield* putSource(app, "web")
      const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
        [{ scopes: ["admin"] }, ["name"]],
        [{ name: "  ", scopes: ["admin"] }, ["name"]],
        [{ name: "x", scopes: [] }, ["scopes"]],
        [{ name: "x", scopes: ["sources:read", "everything"] }, ["scopes[1]"]],
        [{ name: "x", scopes: ["sources:read"], sourceIds: ["web", "nope"] }, ["sourceIds[1]"]],
        [{ name: "x", scopes: ["sources:read"], sourceIds: [] }, ["sourceIds"]],
        [{ name: "x", scopes: ["admin"], sourceIds: ["web"] }, ["sourceIds"]],
        [["not an object"], [""]]
      ]
      for (const [body, paths] of cases) {
        const answer = yield* call(app.baseUrl, "POST", "/admin/keys", { body })
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.code).toBe("invalid_request")
        expect(answer.body.errors.map((e: { path: string }) => e.path)).toStrictEqual(paths)
      }
      expect((yield* call(app.baseUrl, "POST", "/admin/keys", { body: "{" })).body.code).toBe("invalid_json")
      expect(rows(app, "SELECT * FROM api_keys")).toHaveLength(0)
      const writer = yield* createKey(app, { name: "writer", scopes: ["sources:write", "sources:read"] })
      const escalation = yield* call(app.baseUrl, "POST", "/admin/keys", {
        authorization: writer.authorization,
        body: { name: "mine", scopes: ["admin"] }
      })
      expect(escalation.status).toBe(403)
      expect(escalation.body.message).toContain("needs scope admin")
    }))
})

describe("admin API: audit log", () => {
  it.live("every write is recorded with its key, route, ids, address and status; no body, no secret", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const writer = yield* createKey(app, { name: "writer", scopes: ["sources:write", "replay", "privacy"] })
      const as = { authorization: writer.authorization }
      yield* putSource(app, "web")
      const put = (path: string, body: unknown) => call(app.baseUrl, "PUT", path, { ...as, body })
      const post = (path: string, body?: unknown) =>
        call(app.baseUrl, "POST", path, { ...as, ...(body !== undefined && { body }) })
      const writes = [
        yield* put("/admin/sources/web/destinations/crm", {
          enabled: true,
          signing: "standard",
          endpoints: [{ url: "https://crm.example.com/in" }]
        }),
        yield* post("/admin/sources/web/secrets/rotate"),
        yield* post("/admin/sources/web/destinations/crm/secrets/rotate", {}),
        yield* post("/admin/endpoints/disable", { url: "https://crm.example.com/in", sourceId: "web" }),
        yield* post("/admin/endpoints/enable", { url: "https://crm.example.com/in", sourceId: "web" }),
        yield* post("/admin/dead-letters/replay", { sourceId: "web", dryRun: true }),
        yield* post("/admin/dead-letters/purge", { sourceId: "web", dryRun: true }),
        yield* post("/admin/dead-letters/job_nope/replay"),
        yield* post("/admin/deletions", { userId: "user-audit-9" }),
        yield* put("/admin/sources/web/audiences/vip", { userIds: ["user-audit-9"] }),
        yield* put("/admin/sources/web/traits/plan", { values: { "user-audit-9": "plan-audit-value" } }),
        yield* call(app.baseUrl, "DELETE", "/admin/sources/web/destinations/crm", as),
        yield* call(app.baseUrl, "POST", "/admin/keys", { ...as, body: { name: "no", scopes: ["admin"] } })
      ]
      expect(writes.map((w) => w.status)).toStrictEqual([
        201,
        200,
        200,
        200,
        200,
        200,
        200,
        404,
        202,
        200,
        200,
        204,
        403
      ])
      const secrets = [writes[1]!.body.secret as string, writes[2]!.body.secret as string, writer.key]
      for (const secret of secrets) expect(secret.length).toBeGreaterThan(20)
      yield* call(app.baseUrl, "GET", "/admin/sources", as)
      yield* call(app.baseUrl, "DELETE", "/admin/sources/web")

      const page = yield* call(app.baseUrl, "GET", "/admin/audit?limit=1000")
      expect(page.status).toBe(200)
      expect(page.body.next).toBeNull()
      const entries = page.body.entries as ReadonlyArray<Record<string, unknown>>
      // Newest first: the bootstrap's delete, the writer's 13, the source, the writer key's creation.
      expect(entries).toHaveLength(16)
      expect(entries[0]).toStrictEqual({
        at: expect.stringMatching(isoWithMillis),
        keyId: null,
        keyName: "admin token",
        method: "DELETE",
        route: "/admin/sources/{sourceId}",
        path: "/admin/sources/web",
        sourceId: "web",
        destinationId: null,
        address: expect.stringMatching(/127\.0\.0\.1/),
        status: 204
      })
      const mine = entries.slice(1, 14).reverse()
      expect(mine.map((e) => [e.method, e.route, e.status])).toStrictEqual([
        ["PUT", "/admin/sources/{sourceId}/destinations/{destinationId}", 201],
        ["POST", "/admin/sources/{sourceId}/secrets/rotate", 200],
        ["POST", "/admin/sources/{sourceId}/destinations/{destinationId}/secrets/rotate", 200],
        ["POST", "/admin/endpoints/disable", 200],
        ["POST", "/admin/endpoints/enable", 200],
        ["POST", "/admin/dead-letters/replay", 200],
        ["POST", "/admin/dead-letters/purge", 200],
        ["POST", "/admin/dead-letters/{jobId}/replay", 404],
        ["POST", "/admin/deletions", 202],
        ["PUT", "/admin/sources/{sourceId}/audiences/{audienceName}", 200],
        ["PUT", "/admin/sources/{sourceId}/traits/{traitName}", 200],
        ["DELETE", "/admin/sources/{sourceId}/destinations/{destinationId}", 204],
        ["POST", "/admin/keys", 403]
      ])
      for (const entry of mine) expect(entry).toMatchObject({ keyId: writer.id, keyName: "writer" })
      expect(mine[2]).toMatchObject({
        path: "/admin/sources/web/destinations/crm/secrets/rotate",
        sourceId: "web",
        destinationId: "crm"
      })
      expect(entries.slice(14).map((e) => [e.route, e.keyName])).toStrictEqual([
        ["/admin/sources/{sourceId}", "admin token"],
        ["/admin/keys", "admin token"]
      ])

      // Neither the answers' secrets nor any body reaches the log.
      const stored = JSON.stringify(rows(app, "SELECT * FROM audit_log"))
      for (const secret of [...secrets, "crm.example.com", "user-audit-9", "plan-audit-value"]) {
        expect(stored).not.toContain(secret)
      }
      expect(page.text).not.toContain(secrets[0])
    }))

  it.live("pages newest first with an opaque cursor; a bad cursor or limit is 400 naming it", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      for (const id of ["a", "b", "c", "d", "e"]) yield* putSource(app, id)
      const seen: Array<string> = []
      let after: string | null = null
      do {
        const query: string = after === null ? "limit=2" : `limit=2&after=${after}`
        const page = yield* call(app.baseUrl, "GET", `/admin/audit?${query}`)
        expect(page.status).toBe(200)
        expect(page.body.entries.length).toBeLessThanOrEqual(2)
        seen.push(...page.body.entries.map((e: { sourceId: string }) => e.sourceId))
        after = page.body.next
      } while (after !== null)
      expect(seen).toStrictEqual(["e", "d", "c", "b", "a"])
      // Entries written between pages do not move the pages already given.
      const first = yield* call(app.baseUrl, "GET", "/admin/audit?limit=2")
      yield* putSource(app, "f")
      const second = yield* call(app.baseUrl, "GET", `/admin/audit?limit=2&after=${first.body.next}`)
      expect(second.body.entries.map((e: { sourceId: string }) => e.sourceId)).toStrictEqual(["c", "b"])
      for (const [query, path] of [["after=nope", "after"], ["limit=0", "limit"], ["limit=1001", "limit"]]) {
        const bad = yield* call(app.baseUrl, "GET", `/admin/audit?${query}`)
        expect(bad.status, query).toBe(400)
        expect(bad.body.errors[0].path).toBe(path)
      }
      const reader = yield* createKey(app, { name: "reader", scopes: ["sources:read"] })
      expect((yield* call(app.baseUrl, "GET", "/admin/audit", { authorization: reader.authorization })).status).toBe(
        403
      )
    }))
})

const skipPg = skipUnlessCi("the PostgreSQL replica key test", await postgresUnavailable())

describe.skipIf(skipPg)("admin API: keys across replicas (PostgreSQL)", () => {
  it.live("a key made on one replica works on the other, and is refused there as soon as it is revoked", () =>
    Effect.gen(function*() {
      const schema = `hookrelay_keys_${randomBytes(6).toString("hex")}`
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          const sql = await connectSql(databaseUrl)
          await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
          await sql.end()
        })
      )
      const store = () => layerPg({ url: databaseUrl, schema, maxConnections: 4 })
      const first = yield* startApp({ dispatch: false, store: store() })
      const second = yield* startApp({ dispatch: false, store: store() })
      const { authorization, id } = yield* createKey(first, { name: "shared", scopes: ["sources:read"] })
      expect((yield* call(second.baseUrl, "GET", "/admin/keys/self", { authorization })).status).toBe(200)
      expect((yield* call(first.baseUrl, "DELETE", `/admin/keys/${id}`)).status).toBe(204)
      expect((yield* call(second.baseUrl, "GET", "/admin/sources", { authorization })).status).toBe(401)
    }))
})
