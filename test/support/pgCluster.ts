import { execFile, execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { stablePort } from "./outageProcesses.js"

/**
 * A PostgreSQL cluster of a test's own (`initdb` in a temporary directory, its own port, trust on 127.0.0.1), for
 * tests that stop or restart the database: the machine's cluster at `DATABASE_URL` is shared with the other tests.
 * As root (CI), the server binaries run as the `postgres` user through `runuser`, since PostgreSQL refuses root.
 */

const run = promisify(execFile)

const isRoot = () => process.getuid?.() === 0

/** The directory holding `initdb` and `pg_ctl`: Debian's newest `/usr/lib/postgresql/<version>/bin`, else PATH's. */
export const postgresBinaries = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root)
    ? readdirSync(root).filter((version) => existsSync(Path.join(root, version, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a))
    : []
  if (versions[0] !== undefined) return Path.join(root, versions[0], "bin")
  for (const directory of (process.env.PATH ?? "").split(Path.delimiter)) {
    if (directory !== "" && existsSync(Path.join(directory, "initdb")) && existsSync(Path.join(directory, "pg_ctl"))) {
      return directory
    }
  }
  return undefined
}

const postgresIds = (): { readonly uid: number; readonly gid: number } | undefined => {
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim())
    return { uid: id("-u"), gid: id("-g") }
  } catch {
    return undefined
  }
}

/** Why a cluster of the test's own cannot be made here, or undefined when it can. */
export const pgClusterUnavailable = (): string | undefined => {
  if (postgresBinaries() === undefined) {
    return "initdb and pg_ctl are not installed (Debian: the postgresql package)"
  }
  if (isRoot()) {
    if (postgresIds() === undefined) return "running as root and there is no postgres user to run initdb as"
    try {
      execFileSync("runuser", ["--help"], { stdio: "ignore" })
    } catch {
      return "running as root and runuser is missing"
    }
  }
  return undefined
}

export interface PgCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string
  readonly port: number
  /** `pg_ctl restart -m fast`: clients are disconnected, the server is back when it resolves. Epoch ms of both ends. */
  readonly restart: () => Promise<{ readonly began: number; readonly ready: number }>
  /** The server's log so far (for a failure's message). */
  readonly log: () => string
  /** Stops the server at once and removes its directory. */
  readonly destroy: () => void
}

/** A fresh cluster, started and accepting connections on a free port below the ephemeral range. */
export const startPgCluster = async (): Promise<PgCluster> => {
  const binaries = postgresBinaries()
  if (binaries === undefined) throw new Error("initdb is not installed")
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-pg-"))
  const data = Path.join(directory, "data")
  const logFile = Path.join(directory, "postgres.log")
  const ids = isRoot() ? postgresIds() : undefined
  if (ids !== undefined) chownSync(directory, ids.uid, ids.gid)
  const command = (program: string, args: ReadonlyArray<string>): [string, Array<string>] =>
    ids === undefined
      ? [Path.join(binaries, program), [...args]]
      : ["runuser", ["-u", "postgres", "--", Path.join(binaries, program), ...args]]
  const pg = (program: string, args: ReadonlyArray<string>) => {
    const [file, argv] = command(program, args)
    return run(file, argv, { cwd: directory, timeout: 60_000 })
  }
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "")

  // Clients reconnect to the port while the server is down: below the ephemeral range, none of their own sockets can
  // take it (see `stablePort`).
  const port = await stablePort()
  const stopNow = () => {
    const [file, argv] = command("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"])
    try {
      execFileSync(file, argv, { cwd: directory, stdio: "ignore", timeout: 30_000 })
    } catch {
      // not running
    }
    rmSync(directory, { recursive: true, force: true })
  }
  // A test run that dies without its clean-up must not leave a server behind.
  process.once("exit", stopNow)
  try {
    await pg("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"])
    // A restart, not a power cut, is what these tests do: the data survives it without fsync.
    const options = [
      `-p ${port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories=${directory}`,
      "-c fsync=off"
    ].join(" ")
    await pg("pg_ctl", ["start", "-D", data, "-l", logFile, "-w", "-t", "30", "-o", options])
  } catch (error) {
    const output = log()
    process.off("exit", stopNow)
    stopNow()
    const reason = error instanceof Error ? error.message : String(error)
    throw new Error(`could not start a PostgreSQL cluster: ${reason}\n${output}`)
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: async () => {
      const began = Date.now()
      await pg("pg_ctl", ["restart", "-D", data, "-m", "fast", "-w", "-t", "30", "-l", logFile])
      return { began, ready: Date.now() }
    },
    log,
    destroy: () => {
      process.off("exit", stopNow)
      stopNow()
    }
  }
}
