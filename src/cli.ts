#!/usr/bin/env node
/**
 * The `hookrelay` command (the package's `bin`, and what `npm start` runs): `hookrelay [serve]` runs
 * the server of `main.ts` with the environment it reads; `hookrelay rekey` seals the stored secrets again with the
 * first key (`rekey.ts`) and exits; `--help` and `--version` answer without
 * starting anything. Nothing here runs before the arguments are read, so a wrong argument or a
 * missing SQLite driver is a clear message and exit code, not a stack trace.
 */
import { createRequire } from "node:module"
import { helpText } from "./config/Environment.js"

const require = createRequire(import.meta.url)
// The same place from src/ (tsx) and from dist/ (the installed package): the package root.
const packageJson = require("../package.json") as {
  readonly version: string
  readonly name: string
  readonly optionalDependencies: Readonly<Record<string, string>>
}

const help =
  `hookrelay ${packageJson.version}: collects Segment-compatible analytics messages and delivers them as signed webhooks.

Usage:
  hookrelay [serve]     run the server (the default command)
  hookrelay rekey       seal every stored secret again with the first key of HOOKRELAY_SECRET_KEYS
                        (or the SQLite key file), then exit; on SQLite, with the server stopped
  hookrelay --version   print the version
  hookrelay --help      print this help

Environment (all optional; HOOKRELAY_SECRET_KEYS is required with DATABASE_URL):
${helpText()}

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

/** `npm install` of optional dependencies, at the versions this hookrelay asks for. */
const installCommand = (names: ReadonlyArray<string>) =>
  `npm install ${names.map((name) => `${name}@${packageJson.optionalDependencies[name] ?? "latest"}`).join(" ")}`

/** The first line of why `name` cannot be loaded, or undefined when it can. */
const loadProblem = (name: string): Promise<string | undefined> =>
  import(name).then(() => undefined, (error: unknown) => firstLine(error))

/**
 * Serving needs packages a client-only install leaves out (they are optional dependencies): the HTTP stack, the
 * delivery transport and the address rules always, then the driver of the store `DATABASE_URL` selects. Each
 * missing one is named with the command that installs it, before anything else loads.
 */
const storePackages = async () => {
  const always = ["@effect/platform-node", "undici", "ipaddr.js"]
  const problems = await Promise.all(always.map(loadProblem))
  const missing = always.filter((_, index) => problems[index] !== undefined)
  if (missing.length > 0) {
    process.stderr.write(
      `hookrelay: the server's packages are not installed: ${missing.join(", ")} ` +
        `(${problems.find((problem) => problem !== undefined)}).\n` +
        `They are optional dependencies of hookrelay, needed to serve: \`${installCommand(missing)}\`.\n`
    )
    process.exit(1)
  }
  // The store's own rule: only a postgres:// URL selects PostgreSQL; anything else opens SQLite.
  const { isPostgresUrl } = await import("./store/StoreConfig.js")
  if (isPostgresUrl(process.env.DATABASE_URL ?? "")) {
    const problem = await loadProblem("@effect/sql-pg/PgClient")
    if (problem !== undefined) {
      process.stderr.write(
        `hookrelay: the PostgreSQL client is not available (${problem}).\n` +
          `DATABASE_URL selects PostgreSQL; its client is an optional dependency of hookrelay: ` +
          `\`${installCommand(["@effect/sql-pg"])}\`, or unset DATABASE_URL for SQLite.\n`
      )
      process.exit(1)
    }
  } else {
    const problem = await sqliteDriverProblem()
    if (problem !== undefined) {
      process.stderr.write(
        `hookrelay: the SQLite driver is not available (${problem}).\n` +
          `It is an optional dependency of hookrelay: \`${installCommand(["better-sqlite3"])}\` ` +
          `(it needs a prebuilt binary for this platform or a C++ toolchain), ` +
          `or set DATABASE_URL to a postgres:// URL.\n`
      )
      process.exit(1)
    }
  }
}

const serve = async () => {
  await storePackages()
  await import("./main.js")
}

const rekey = async () => {
  await storePackages()
  const { runRekey } = await import("./rekey.js")
  process.exit(await runRekey())
}

const [command, ...rest] = process.argv.slice(2)
if (command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(help)
} else if (command === "--version" || command === "-v" || command === "version") {
  process.stdout.write(`${packageJson.version}\n`)
} else if ((command === undefined || command === "serve") && rest.length === 0) {
  await serve()
} else if (command === "rekey" && rest.length === 0) {
  await rekey()
} else {
  const unknown = command === "serve" || command === "rekey" ? rest[0] : command
  process.stderr.write(`hookrelay: unknown argument ${JSON.stringify(unknown)}\n\n${help}`)
  process.exit(2)
}

export {}
