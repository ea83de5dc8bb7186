import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

/** The SQLite thread's program: its compiled file, or (running from the TypeScript sources) its code. */
export type ThreadProgram =
  | { readonly _tag: "File"; readonly url: URL }
  | { readonly _tag: "Source"; readonly source: string }

let bundled: string | undefined

/**
 * Compiled (`dist`, `npm start`, the published package) the program is the `.js` file beside this
 * one. From the sources (tsx, vitest) a thread has no TypeScript loader of its own, so the program
 * and the few modules it imports are bundled once per process into CommonJS with esbuild (a
 * development dependency, loaded only here) and evaluated by the thread.
 */
export const threadProgram = (): ThreadProgram => {
  if (!import.meta.url.endsWith(".ts")) {
    return { _tag: "File", url: new URL("./SqliteThreadProgram.js", import.meta.url) }
  }
  if (bundled === undefined) {
    const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild")
    const result = esbuild.buildSync({
      entryPoints: [fileURLToPath(new URL("./SqliteThreadProgram.ts", import.meta.url))],
      bundle: true,
      format: "cjs",
      platform: "node",
      target: "node20",
      packages: "external",
      write: false,
      logLevel: "silent"
    })
    bundled = result.outputFiles[0]!.text
  }
  return { _tag: "Source", source: bundled }
}
