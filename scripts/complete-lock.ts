// The npm registry reachable here answers 404 for other platforms' optional packages (rollup's and
// msgpackr-extract's native builds), so `npm install` leaves them out of package-lock.json and
// `npm ci` then refuses the lock as out of sync. This adds the missing entries with their
// platform fields: `npm ci` accepts the lock and skips them on platforms they are not for.
// Run after any dependency change: `npm run lock:complete`.
import { readFileSync, writeFileSync } from "node:fs"

const path = new URL("../package-lock.json", import.meta.url)
interface LockEntry {
  readonly optionalDependencies?: Record<string, string>
  readonly [field: string]: unknown
}
const lock = JSON.parse(readFileSync(path, "utf8")) as { packages: Record<string, LockEntry> }
const platformPattern =
  /(android|darwin|freebsd|linux|openbsd|openharmony|win32|sunos|aix)-([a-z0-9]+)(?:-(gnueabihf|musleabihf|gnu|musl|msvc|eabi))?$/

const added: Array<string> = []
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`
    if (key in lock.packages) continue
    const match = platformPattern.exec(name.split("/").at(-1) ?? "")
    if (match === null || !/^\d+\.\d+\.\d+$/.test(version)) continue
    const [, os, cpu, abi] = match
    const libc = abi === "gnu" || abi === "gnueabihf"
      ? ["glibc"]
      : abi === "musl" || abi === "musleabihf"
      ? ["musl"]
      : undefined
    lock.packages[key] = { version, cpu: [cpu], optional: true, os: [os], ...(libc && { libc }) }
    added.push(key)
  }
}
const [root, ...rest] = Object.entries(lock.packages)
lock.packages = Object.fromEntries([root!, ...rest.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))])
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`package-lock.json: ${added.length} platform entries added`)
