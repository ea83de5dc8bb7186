import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"

/**
 * Stores that a test can take away and give back: a PostgreSQL cluster of its own (never the shared one) and a small
 * tmpfs for a SQLite data directory. Both need root (or a `postgres` user) on Linux; `unavailableReason` says why not.
 * Under CI (`CI=true`) a test must fail rather than skip when they cannot be set up.
 */

const pgBin = process.env.HOOKRELAY_PG_BIN ?? "/usr/lib/postgresql/15/bin"

const asPostgres = (command: string, args: ReadonlyArray<string>) =>
  execFileSync("runuser", ["-u", "postgres", "--", Path.join(pgBin, command), ...args], { stdio: "pipe" })

export const mustRunFaults = process.env.CI === "true"

export interface ThrowawayPostgres {
  readonly url: string
  /** Stops it at once (`-m immediate`: connections cut, as a crash or a failover does). */
  readonly stop: () => void
  readonly start: () => void
  /** Stops it and removes its files. */
  readonly destroy: () => void
}

/** Why this machine cannot run a throwaway PostgreSQL, or undefined when it can. */
export const postgresFaultsUnavailable = (): string | undefined => {
  if (process.platform !== "linux") return "needs Linux"
  if (!existsSync(Path.join(pgBin, "pg_ctl"))) return `no PostgreSQL binaries at ${pgBin} (set HOOKRELAY_PG_BIN)`
  if (process.getuid?.() !== 0) return "needs root (to run PostgreSQL as the postgres user)"
  return undefined
}

/** A PostgreSQL cluster of its own on `port`, in a temporary directory, trusting local connections. */
export const startThrowawayPostgres = (port: number): ThrowawayPostgres => {
  const root = mkdtempSync(Path.join(tmpdir(), "hookrelay-pg-"))
  chmodSync(root, 0o777)
  const data = Path.join(root, "data")
  const socket = Path.join(root, "socket")
  mkdirSync(socket)
  chmodSync(socket, 0o777)
  asPostgres("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"])
  writeFileSync(Path.join(root, "log"), "")
  chmodSync(Path.join(root, "log"), 0o666)
  const options = `-p ${port} -k ${socket} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`
  const start = () => asPostgres("pg_ctl", ["-D", data, "-l", Path.join(root, "log"), "-o", options, "-w", "start"])
  const stop = () => asPostgres("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
  start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: () => {
      try {
        stop()
      } catch {
        // already stopped
      }
      rmSync(root, { recursive: true, force: true })
    }
  }
}

export interface SmallDisk {
  readonly directory: string
  /** Fills what is left of it with a file of its own. */
  readonly fill: () => void
  /** Removes that file. */
  readonly free: () => void
  readonly destroy: () => void
}

/** Why this machine cannot mount a small tmpfs, or undefined when it can. */
export const smallDiskUnavailable = (): string | undefined => {
  if (process.platform !== "linux") return "needs Linux"
  if (process.getuid?.() !== 0) return "needs root (to mount a tmpfs)"
  return undefined
}

/** A tmpfs of `size` (e.g. "8m") mounted on a temporary directory. */
export const mountSmallDisk = (size: string): SmallDisk => {
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-disk-"))
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", directory], { stdio: "pipe" })
  const filler = Path.join(directory, "filler")
  return {
    directory,
    fill: () => {
      // dd stops with "No space left on device", which is the point.
      try {
        execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=64k"], { stdio: "pipe" })
      } catch {
        // full
      }
    },
    free: () => rmSync(filler, { force: true }),
    destroy: () => {
      try {
        execFileSync("umount", ["-l", directory], { stdio: "pipe" })
      } finally {
        rmSync(directory, { recursive: true, force: true })
      }
    }
  }
}
