import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { repoRoot } from "./serverProcess.js"

/** The README's client example: its ```ts block that imports `hookrelay/client`, as printed. */
export const readmeClientExample = (): string => {
  const readme = readFileSync(Path.join(repoRoot, "README.md"), "utf8")
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!)
  const example = blocks.find((block) => block.includes("from \"hookrelay/client\"") && block.includes("createClient("))
  if (example === undefined) throw new Error("README.md has no ```ts block that creates a client from hookrelay/client")
  return example
}

/**
 * The example as a module of its own, unchanged, after the names it takes from the code around it (`endpoint` from
 * `HOOKRELAY_ENDPOINT`, the handler's `userId` and `url`). An `.mts` file in a temporary directory: an ES module (the
 * example awaits at its top level) whose `hookrelay/client` tsx resolves through tsconfig's paths to the sources.
 */
export const writeReadmeClientModule = (userId: string) => {
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-readme-client-"))
  const file = Path.join(directory, "example.mts")
  writeFileSync(
    file,
    [
      "const endpoint = process.env.HOOKRELAY_ENDPOINT!",
      `const userId = ${JSON.stringify(userId)}`,
      "const url = \"https://example.com/pricing\"",
      readmeClientExample()
    ].join("\n")
  )
  return { file, remove: () => rmSync(directory, { recursive: true, force: true }) }
}
