import { afterEach, describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, globSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { connectSql, databaseUrl, postgresUnavailable, type SqlConnection } from "../support/postgres.js"
import type { ServerProcess } from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"
import {
  admin,
  decryptions,
  type Finished,
  leaked,
  newKey,
  type Receiver,
  runCli,
  sealedSource,
  start,
  startReceiver,
  stop,
  track,
  verifyDelivery,
  waitUntil
} from "./secretsAtRestProcesses.js"

/**
 * Secrets at rest with real server processes (docs/SECURITY.md): the SQLite key file, PostgreSQL's required keys,
 * dumps without the secrets while every delivery still verifies, decryption counted once per settings version under
 * load, a refused start in one line that writes nothing, and rotation through `hookrelay rekey`.
 */

const skipPg = skipUnlessCi("the PostgreSQL secrets-at-rest processes", await postgresUnavailable())

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const tempDirectory = () => {
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-sealed-e2e-"))
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

const receiver = async () => {
  const started = await startReceiver()
  cleanups.push(() => started.close())
  return started
}

const started = async (env: Record<string, string>) => {
  const server = await start(env)
  cleanups.push(() => stop(server))
  return server
}

/** The one line a refused start prints: nothing else on stderr, exit code 1. */
const expectOneLine = (finished: Finished, pattern: RegExp) => {
  expect(finished.code).toBe(1)
  const lines = finished.stderr.trim().split("\n")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(pattern)
}

/**
 * Saves the source, delivers `count` messages to both its destinations, and checks every delivery verifies and that
 * the decryption counter did not move with them. The secrets.
 */
const saveAndDeliver = async (server: ServerProcess, target: Receiver, count: number) => {
  const { secrets, source, values } = sealedSource(target)
  const saved = await admin(server, "PUT", `/admin/sources/${source.id}`, source)
  expect([200, 201]).toContain(saved.status)
  expect(leaked(saved.text, values)).toEqual([])
  const afterSave = await decryptions(server)
  await deliverAndVerify(server, target, source.writeKey, count, secrets)
  expect(await decryptions(server)).toBe(afterSave)
  return { secrets, source, values, afterSave }
}

const deliverAndVerify = async (
  server: ServerProcess,
  target: Receiver,
  writeKey: string,
  count: number,
  secrets: ReturnType<typeof sealedSource>["secrets"]
) => {
  const before = target.received.length
  await track(server, writeKey, count, randomBytes(4).toString("hex"))
  await waitUntil(() => target.received.length >= before + 2 * count, `${2 * count} deliveries`)
  const problems = target.received.slice(before).map((delivery) => verifyDelivery(delivery, secrets))
  expect(problems.filter((problem) => problem !== undefined)).toEqual([])
}

const sqliteDump = (directory: string) =>
  globSync(Path.join(directory, "hookrelay.db*")).filter(existsSync).map((file) =>
    readFileSync(file).toString("latin1")
  )
    .join("\n")

describe("secrets at rest, real processes (SQLite)", { timeout: 240_000 }, () => {
  it("makes a key file once; dumps hold no secret; deliveries verify; one decryption per settings version", async () => {
    const directory = tempDirectory()
    const target = await receiver()
    const env = { DATABASE_URL: "", HOOKRELAY_DATA_DIR: directory, HOOKRELAY_SECRET_KEYS: "" }
    const server = await started(env)
    const keyFile = Path.join(directory, "secret-keys")
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(server.output()).toContain(`of ${keyFile} (made now`)
    const fileKey = readFileSync(keyFile, "utf8")
    const { afterSave, secrets, source, values } = await saveAndDeliver(server, target, 1000)
    // The save read its sealed values back once; the 1,000 messages (2,000 deliveries) decrypted nothing.
    expect(afterSave).toBe(values.length)
    // A settings change seals every value again: each is decrypted once more, then not again under load.
    expect(
      (await admin(server, "PUT", `/admin/sources/${source.id}`, { ...source, writeKey: `${source.writeKey}x` })).status
    )
      .toBe(200)
    const afterChange = await decryptions(server)
    expect(afterChange).toBe(2 * values.length)
    await deliverAndVerify(server, target, `${source.writeKey}x`, 200, secrets)
    expect(await decryptions(server)).toBe(afterChange)
    expect(leaked(sqliteDump(directory), values)).toEqual([])
    expect(leaked(server.output(), values)).toEqual([])
    await stop(server)
    expect(leaked(sqliteDump(directory), values)).toEqual([])

    // The next start reads the same file, and decrypts at start what it checks.
    const again = await started(env)
    expect(readFileSync(keyFile, "utf8")).toBe(fileKey)
    expect(again.output()).not.toContain("made now")
    await deliverAndVerify(again, target, `${source.writeKey}x`, 50, secrets)
    await stop(again)

    // Another key in the variable: refused in one line, the file untouched.
    const before = sqliteDump(directory)
    expectOneLine(
      await runCli([], { ...env, HOOKRELAY_SECRET_KEYS: newKey("other") }),
      /^hookrelay: source "sealed": a stored secret is sealed with key "local-[0-9a-f]+", which HOOKRELAY_SECRET_KEYS does not hold$/
    )
    expect(sqliteDump(directory)).toBe(before)
    expectOneLine(
      await runCli([], { ...env, HOOKRELAY_SECRET_KEYS: "k1:not-base64!" }),
      /^hookrelay: HOOKRELAY_SECRET_KEYS: entry 1 \(key "k1"\) is not base64$/
    )
  })

  it("rotates: A (the key file), then B,A, `hookrelay rekey`, then B alone", async () => {
    const directory = tempDirectory()
    const target = await receiver()
    const env = { DATABASE_URL: "", HOOKRELAY_DATA_DIR: directory }
    const first = await started({ ...env, HOOKRELAY_SECRET_KEYS: "" })
    const { secrets, source, values } = await saveAndDeliver(first, target, 20)
    await stop(first)
    const a = readFileSync(Path.join(directory, "secret-keys"), "utf8").trim()
    const b = newKey("b")

    const both = await started({ ...env, HOOKRELAY_SECRET_KEYS: `${b},${a}` })
    await deliverAndVerify(both, target, source.writeKey, 20, secrets)
    await stop(both)
    const rekeyed = await runCli(["rekey"], { ...env, HOOKRELAY_SECRET_KEYS: `${b},${a}` })
    expect(rekeyed.code).toBe(0)
    expect(rekeyed.stdout).toContain(`hookrelay: sealed ${values.length} stored secrets again with the first key`)

    const onlyB = await started({ ...env, HOOKRELAY_SECRET_KEYS: b })
    await deliverAndVerify(onlyB, target, source.writeKey, 20, secrets)
    await stop(onlyB)
    expect(leaked(sqliteDump(directory), values)).toEqual([])
    // The retired key opens nothing any more: refused, in one line.
    expectOneLine(
      await runCli([], { ...env, HOOKRELAY_SECRET_KEYS: "" }),
      /^hookrelay: source "sealed": a stored secret is sealed with key "b", which HOOKRELAY_SECRET_KEYS does not hold$/
    )
  })
})

/** A fresh schema, dropped afterwards, and the DATABASE_URL whose sessions work in it. */
const freshSchema = async (): Promise<
  { readonly url: string; readonly schema: string; readonly sql: SqlConnection }
> => {
  const schema = `sealed_e2e_${randomBytes(5).toString("hex")}`
  const sql = await connectSql(databaseUrl)
  await sql.query(`CREATE SCHEMA ${schema}`)
  cleanups.push(async () => {
    await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await sql.end()
  })
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return { url: url.toString(), schema, sql }
}

const pgDump = (schema: string) =>
  execFileSync(globSync("/usr/lib/postgresql/*/bin/pg_dump").sort().at(-1) ?? "pg_dump", [
    "--dbname",
    databaseUrl,
    "--schema",
    schema
  ], { encoding: "latin1", maxBuffer: 256 * 1024 * 1024 })

describe.skipIf(skipPg)("secrets at rest, real processes (PostgreSQL)", { timeout: 240_000 }, () => {
  it("requires the keys; pg_dump holds no secret; deliveries verify; a wrong key is refused and writes nothing", async () => {
    const { schema, sql, url } = await freshSchema()
    const target = await receiver()
    expectOneLine(
      await runCli([], { DATABASE_URL: url, HOOKRELAY_SECRET_KEYS: "" }),
      /^hookrelay: HOOKRELAY_SECRET_KEYS is required with PostgreSQL/
    )
    const a = newKey("a")
    const server = await started({ DATABASE_URL: url, HOOKRELAY_SECRET_KEYS: a })
    const { afterSave, values } = await saveAndDeliver(server, target, 1000)
    expect(afterSave).toBe(values.length)
    expect(leaked(pgDump(schema), values)).toEqual([])
    expect(leaked(server.output(), values)).toEqual([])
    await stop(server)

    const rows = async () =>
      (await sql.query(
        `SELECT id, webhooks, destinations, updated_at::text AS updated_at FROM ${schema}.sources ORDER BY id`
      )).rows
    const before = await rows()
    expect(JSON.stringify(before)).toContain(`"hrenc:v1:a:`)
    const sameIdOtherBytes = newKey("a")
    expectOneLine(
      await runCli([], { DATABASE_URL: url, HOOKRELAY_SECRET_KEYS: sameIdOtherBytes }),
      /^hookrelay: source "sealed": a stored secret does not open with key "a"/
    )
    expectOneLine(
      await runCli([], { DATABASE_URL: url, HOOKRELAY_SECRET_KEYS: `${newKey("b")},${sameIdOtherBytes}` }),
      /^hookrelay: source "sealed": a stored secret does not open with key "a"/
    )
    expect(await rows()).toEqual(before)
    expectOneLine(
      await runCli(["rekey"], { DATABASE_URL: url, HOOKRELAY_SECRET_KEYS: newKey("c") }),
      /^hookrelay: rekey failed: source "sealed": a stored secret is sealed with key "a", which/
    )
    expect(await rows()).toEqual(before)
  })
})
