// `node scripts/prune-runtime.mjs <dir>`: leaves in <dir>/node_modules only what runs. After `npm ci --omit=dev`
// (the Dockerfile's install stage; test/package/Image.test.ts runs the same), it removes the packages only an install
// script needs (better-sqlite3's prebuild-install, which fetched its binary, and what only it uses) and
// better-sqlite3's build artefacts and C sources, keeping its compiled module. Plain JavaScript: the image has no tsx.
import console from "node:console"
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs"
import * as Path from "node:path"
import process from "node:process"

const app = Path.resolve(process.argv[2] ?? ".")
const lock = JSON.parse(readFileSync(Path.join(app, "node_modules/.package-lock.json"), "utf8"))
const root = JSON.parse(readFileSync(Path.join(app, "package.json"), "utf8"))
/** Dependencies used only while installing: the edge is not followed. */
const installOnly = { "better-sqlite3": ["prebuild-install"] }

/** Node's resolution of `name` from the package at `location` (a key of the lockfile, "" for the root). */
const resolve = (location, name) => {
  for (let from = location;; from = from.slice(0, Math.max(0, from.lastIndexOf("/node_modules/")))) {
    const candidate = `${from === "" ? "" : `${from}/`}node_modules/${name}`
    if (candidate in lock.packages) return candidate
    if (from === "") return undefined
  }
}

const kept = new Set()
const visit = (location, manifest) => {
  const packageName = location.slice(location.lastIndexOf("node_modules/") + "node_modules/".length)
  const skipped = installOnly[packageName] ?? []
  const names = Object.keys({
    ...manifest.dependencies,
    ...manifest.optionalDependencies,
    ...manifest.peerDependencies
  })
  for (const name of names.filter((name) => !skipped.includes(name))) {
    const target = resolve(location, name)
    if (target === undefined || kept.has(target)) continue
    kept.add(target)
    visit(target, lock.packages[target])
  }
}
visit("", root)

const removed = Object.keys(lock.packages).filter((location) =>
  !kept.has(location) && existsSync(Path.join(app, location))
)
for (const location of removed) rmSync(Path.join(app, location), { recursive: true, force: true })

const sqlite = Path.join(app, "node_modules/better-sqlite3")
if (existsSync(Path.join(sqlite, "build/Release/better_sqlite3.node"))) {
  for (const entry of ["deps", "src", "binding.gyp"]) rmSync(Path.join(sqlite, entry), { recursive: true, force: true })
  for (const entry of readdirSync(Path.join(sqlite, "build"))) {
    if (entry !== "Release") rmSync(Path.join(sqlite, "build", entry), { recursive: true, force: true })
  }
  for (const entry of readdirSync(Path.join(sqlite, "build/Release"))) {
    if (entry !== "better_sqlite3.node") {
      rmSync(Path.join(sqlite, "build/Release", entry), { recursive: true, force: true })
    }
  }
}
console.log(
  `pruned ${removed.length} install-time packages: ${removed.map((l) => l.replace(/^.*node_modules\//, "")).join(", ")}`
)
