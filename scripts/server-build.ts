// Compiles the server (src/ → dist/) when dist/cli.js (the entry) is missing or older than a source file.
// `npm start` runs it first (prestart), so the server runs as plain JavaScript on plain `node`:
// under tsx the same server process takes ~100 MB more memory (the loader and its transpile
// caches), and `npm start` is how users run it. `npm run build` always rebuilds, from scratch.
import { execFileSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { isStale, writtenAt } from "./staleness.js"

const root = fileURLToPath(new URL("../", import.meta.url))
const entry = Path.join(root, "dist", "cli.js")

const sources = ["src", "tsconfig.json", "tsconfig.build.json", "package-lock.json"].map((name) =>
  Path.join(root, name)
)
const built = writtenAt(entry)
if (isStale(entry, sources)) {
  console.log(built === undefined ? "compiling the server (src → dist)" : "recompiling the server (src changed)")
  execFileSync(process.execPath, [
    Path.join(root, "node_modules", "typescript", "bin", "tsc"),
    "-p",
    "tsconfig.build.json"
  ], {
    cwd: root,
    stdio: "inherit"
  })
}
