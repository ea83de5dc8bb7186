#!/usr/bin/env node
/**
 * The `hookrelay` command (the package's `bin`, and what `npm start` runs): `hookrelay [serve]` runs
 * the server of `main.ts` with the environment it reads; `--help` and `--version` answer without
 * starting anything. Nothing here runs before the arguments are read, so a wrong argument or a
 * missing SQLite driver is a clear message and exit code, not a stack trace.
 */
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)
// The same place from src/ (tsx) and from dist/ (the installed package): the package root.
const packageJson = require("../package.json") as { readonly version: string; readonly name: string }

const help =
  `hookrelay ${packageJson.version}: collects Segment-compatible analytics messages and delivers them as signed webhooks.

Usage:
  hookrelay [serve]     run the server (the default command)
  hookrelay --version   print the version
  hookrelay --help      print this help

Environment (all optional):
  PORT                              HTTP port (8080)
  HOST                              address to listen on (0.0.0.0)
  HOOKRELAY_DATA_DIR                directory of the SQLite file, hookrelay.db (./data)
  DATABASE_URL                      a postgres:// URL selects PostgreSQL instead of SQLite
  HOOKRELAY_CONFIG                  a JSON file of sources created or updated at start
  HOOKRELAY_ADMIN_TOKEN             the admin API's bearer token; unset, the admin API is disabled
  HOOKRELAY_ALLOW_PRIVATE_NETWORKS  true allows webhooks to loopback and private addresses (false)
  HOOKRELAY_MAX_BACKLOG             pending jobs above which ingest answers 503 (1000000)
  HOOKRELAY_INGEST_CONCURRENCY      ingest requests committing at once (32)
  HOOKRELAY_INGEST_WAIT             how long a request waits for a commit slot (2 seconds)
  HOOKRELAY_RETENTION               how long delivered jobs are kept, in days or a duration (7)
  HOOKRELAY_KEEP_ALIVE_TIMEOUT      idle keep-alive of HTTP connections (65 seconds)
  HOOKRELAY_REQUEST_DEADLINE        a request not answered by then gets 503 timeout (60 seconds)
  HOOKRELAY_LOG_LEVEL               trace, debug, info, warning, error, fatal or none (info)
  OTEL_EXPORTER_OTLP_ENDPOINT       an OTLP/HTTP collector: export traces and metrics (off);
                                    the other standard OTEL_* variables apply too

SIGTERM or SIGINT stops accepting, finishes or releases in-flight work, and exits 0.
Web console: /console (with HOOKRELAY_ADMIN_TOKEN); admin API reference: /console/api,
its OpenAPI 3.1 document: /admin/openapi.json.
`

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0]

/**
 * Why the SQLite store cannot open, when its driver (an optional dependency: a project that only
 * uses `hookrelay/client` never needs it) is not installed or its native build is missing.
 */
const sqliteDriverProblem = async (): Promise<string | undefined> => {
  try {
    const { loadDriver } = await import("./store/sqlite/SqliteDriver.js")
    const { Database } = loadDriver()
    new Database(":memory:").close()
    return undefined
  } catch (error) {
    return firstLine(error)
  }
}

const serve = async () => {
  try {
    await import("@effect/platform-node")
  } catch (error) {
    process.stderr.write(
      `hookrelay: @effect/platform-node is not installed (${firstLine(error)}).\n` +
        `It is an optional dependency of hookrelay, needed to serve: \`npm install @effect/platform-node\`.\n`
    )
    process.exit(1)
  }
  // The store's own rule: only a postgres:// URL selects PostgreSQL; anything else opens SQLite.
  const { isPostgresUrl } = await import("./store/StoreConfig.js")
  const problem = isPostgresUrl(process.env.DATABASE_URL ?? "") ? undefined : await sqliteDriverProblem()
  if (problem !== undefined) {
    process.stderr.write(
      `hookrelay: the SQLite driver is not available (${problem}).\n` +
        `It is an optional dependency of hookrelay: \`npm install better-sqlite3\` ` +
        `(it needs a prebuilt binary for this platform or a C++ toolchain), ` +
        `or set DATABASE_URL to a postgres:// URL.\n`
    )
    process.exit(1)
  }
  await import("./main.js")
}

const [command, ...rest] = process.argv.slice(2)
if (command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(help)
} else if (command === "--version" || command === "-v" || command === "version") {
  process.stdout.write(`${packageJson.version}\n`)
} else if ((command === undefined || command === "serve") && rest.length === 0) {
  await serve()
} else {
  const unknown = command === "serve" ? rest[0] : command
  process.stderr.write(`hookrelay: unknown argument ${JSON.stringify(unknown)}\n\n${help}`)
  process.exit(2)
}

export {}
