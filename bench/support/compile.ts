/**
 * Transpiles TypeScript sources to plain ESM JavaScript under node_modules/.cache, so that a
 * benchmark's child process runs as a deployed service does (`npm start` runs the compiled
 * server): on plain `node`, without tsx's loader, which costs RSS and wraps every closure
 * (bench/NOTES.md, "Benchmark method"). Packages are still imported from node_modules.
 */
import { fork } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository; a compiled copy running under node_modules/.cache is told it by `HOOKRELAY_BENCH_ROOT`. */
export const repoRoot = process.env.HOOKRELAY_BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/**
 * Transpiles every `.ts` file below each of `directories` (relative to the repository) and each of
 * `files` into `node_modules/.cache/<name>`, keeping their relative paths; returns that directory.
 */
export const transpileForNode = async (
  name: string,
  directories: ReadonlyArray<string>,
  files: ReadonlyArray<string>
): Promise<string> => {
  const { default: ts } = await import("typescript")
  const out = join(repoRoot, "node_modules", ".cache", name)
  rmSync(out, { recursive: true, force: true })
  const transpile = (file: string) => {
    const { outputText } = ts.transpileModule(readFileSync(join(repoRoot, file), "utf8"), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      fileName: file
    })
    const target = join(out, file.replace(/\.ts$/, ".js"))
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, outputText)
  }
  const walk = (directory: string) => {
    for (const entry of readdirSync(join(repoRoot, directory), { withFileTypes: true })) {
      const path = `${directory}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) transpile(path)
    }
  }
  for (const directory of directories) walk(directory)
  for (const file of files) transpile(file)
  // The version too: telemetry reads it (`OtlpExport`) for the exported resource and scope.
  const { version } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { readonly version: string }
  writeFileSync(join(out, "package.json"), `${JSON.stringify({ type: "module", version })}\n`)
  return out
}

/**
 * Runs benchmark `script` in a child process compiled to plain JavaScript (`transpileForNode`, with `directories` and
 * the script), on plain node as `npm start` runs the server, with this process's arguments; answers its exit code.
 * The child writes the results.
 */
export const runCompiled = async (
  name: string,
  directories: ReadonlyArray<string>,
  script: string,
  options: { readonly files?: ReadonlyArray<string>; readonly execArgv?: ReadonlyArray<string> } = {}
): Promise<number> => {
  const compiled = await transpileForNode(name, directories, [script, ...options.files ?? []])
  const child = fork(join(compiled, script.replace(/\.ts$/, ".js")), process.argv.slice(2), {
    execArgv: [...options.execArgv ?? []],
    env: { ...process.env, HOOKRELAY_BENCH_ROOT: repoRoot },
    stdio: "inherit"
  })
  return new Promise((resolve, reject) => {
    child.once("error", reject)
    child.once("exit", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)))
  })
}
