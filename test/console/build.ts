import { execFile } from "node:child_process"
import * as Path from "node:path"
import { repoRoot } from "../support/serverProcess.js"

/** The built console directory of this checkout. */
export const consoleDist = Path.join(repoRoot, "console", "dist")

/**
 * Builds the console when it is missing or stale, as `npm start` does (scripts/console-build.ts),
 * in a child process: Vite's build does not belong in a test worker.
 */
export const ensureConsoleBuilt = () =>
  new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", Path.join(repoRoot, "node_modules/tsx/dist/loader.mjs"), "scripts/console-build.ts"],
      { cwd: repoRoot, timeout: 120_000, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error === null) resolve()
        else reject(new Error(`console build failed: ${error.message}\n${stdout}\n${stderr}`))
      }
    )
  })
