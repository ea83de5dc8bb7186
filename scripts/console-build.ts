// Builds the web console (console/ → console/dist) when it is missing or older than its sources.
// `npm start` runs it first (prestart), so a fresh clone works with `npm ci && npm start`;
// `npm run build` and `npm pack` always build it (`--force`).
//
// A running server may be reading console/dist meanwhile (and test files build it concurrently), so
// the build goes to a directory of its own and is moved in file by file: the assets first (their
// names are their content's hash, so an existing one is already right), then index.html by one
// atomic rename. A reader sees the old console or the new one, never none.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { isStale, writtenAt } from "./staleness.js"

const consoleRoot = fileURLToPath(new URL("../console/", import.meta.url))
const dist = Path.join(consoleRoot, "dist")
const builtIndex = Path.join(dist, "index.html")

/** Moves a fresh build into console/dist without a moment where index.html or its assets are missing. */
const moveIn = (staging: string) => {
  mkdirSync(Path.join(dist, "assets"), { recursive: true })
  const assets = readdirSync(Path.join(staging, "assets"))
  for (const name of assets) {
    const target = Path.join(dist, "assets", name)
    if (!existsSync(target)) renameSync(Path.join(staging, "assets", name), target)
  }
  for (const name of readdirSync(staging)) {
    if (name !== "assets" && name !== "index.html") renameSync(Path.join(staging, name), Path.join(dist, name))
  }
  renameSync(Path.join(staging, "index.html"), builtIndex)
  // Assets the new index.html no longer names are from older builds of changed sources.
  const index = readFileSync(builtIndex, "utf8")
  for (const name of readdirSync(Path.join(dist, "assets"))) {
    if (!assets.includes(name) && !index.includes(name)) rmSync(Path.join(dist, "assets", name), { force: true })
  }
}

const sources = ["src", "index.html", "vite.config.ts", "tsconfig.json"].map((name) => Path.join(consoleRoot, name))
const force = process.argv.includes("--force")
const built = writtenAt(builtIndex)
const stale = isStale(builtIndex, sources)

if (force || stale) {
  // A test runner's NODE_ENV=test would give a development build (JSX with source locations).
  process.env.NODE_ENV = "production"
  const { build } = await import("vite")
  console.log(built === undefined ? "building the web console" : "rebuilding the web console")
  // A dot directory: the server never serves dot paths, and dist/ is ignored by git.
  const staging = Path.join(dist, `.build-${process.pid}`)
  try {
    await build({
      configFile: Path.join(consoleRoot, "vite.config.ts"),
      logLevel: "warn",
      build: { outDir: staging, emptyOutDir: true }
    })
    moveIn(staging)
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}
