import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { repoRoot } from "../support/serverProcess.js"

const node = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...args],
      { cwd: repoRoot, encoding: "utf8", timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    )
  })

// Where two of those closures live, asked of V8 itself (`%InYoungGeneration`) in a child process: the ones Effect
// makes on every Effect.async and every uninterruptible call (the check above covers every site).
const probe = `
const { Effect } = require("effect")
const young = new Function("value", "return %InYoungGeneration(value)")
// One parameter: with two, Effect.async wraps the primitive in an interruption handler.
const asyncWrapper = Effect.async((resume) => {})
const asyncRegister = asyncWrapper.commit.call(asyncWrapper).effect_instruction_i0
console.log(JSON.stringify({
  async: young(asyncRegister),
  uninterruptible: young(Effect.uninterruptible(Effect.void).effect_instruction_i1)
}))
`

describe("effect as installed (scripts/effect-pretenuring.mjs, run by npm ci)", () => {
  it("has no per-call closure assigned straight to a property left", async () => {
    const { code, stderr } = await node([Path.join("scripts", "effect-pretenuring.mjs"), "--check"])
    expect(stderr).toBe("")
    expect(code).toBe(0)
  })

  it("allocates the closures of Effect.async and Effect.uninterruptible in the young generation", async () => {
    const { code, stdout, stderr } = await node(["--allow-natives-syntax", "-e", probe])
    expect(stderr).toBe("")
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toEqual({ async: true, uninterruptible: true })
  })
})
