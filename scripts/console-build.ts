// Builds the web console (console/ → console/dist) when it is missing or older than its sources.
// `npm start` runs it first (prestart), so a fresh clone works with `npm ci && npm start`;
// `npm run build` and `npm pack` always build it (`--force`).
import { readdirSync, statSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const consoleRoot = fileURLToPath(new URL("../console/", import.meta.url))
const builtIndex = Path.join(consoleRoot, "dist", "index.html")

const newestSource = (path: string): number => {
  const stats = statSync(path)
  if (!stats.isDirectory()) return stats.mtimeMs
  return Math.max(0, ...readdirSync(path).map((name) => newestSource(Path.join(path, name))))
}

const builtAt = (): number | undefined => {
  try {
    return statSync(builtIndex).mtimeMs
  } catch {
    return undefined
  }
}

const sources = ["src", "index.html", "vite.config.ts", "tsconfig.json"].map((name) => Path.join(consoleRoot, name))
const force = process.argv.includes("--force")
const built = builtAt()
const stale = built === undefined || sources.some((source) => newestSource(source) > built)

if (force || stale) {
  // A test runner's NODE_ENV=test would give a development build (JSX with source locations).
  process.env.NODE_ENV = "production"
  const { build } = await import("vite")
  console.log(built === undefined ? "building the web console" : "rebuilding the web console")
  await build({ configFile: Path.join(consoleRoot, "vite.config.ts"), logLevel: "warn" })
}
