/**
 * `npm ci` runs this (the `prepare` script): it rewrites the few places in the installed `effect` where a closure
 * made on every call is assigned straight to a property (`effect.effect_instruction_i0 = (resume) => { … }`), so
 * that it is bound to a name first (`const effect_instruction_i0Literal = …; effect.effect_instruction_i0 = …`).
 *
 * Why: V8's parser marks a function literal assigned straight to a property as "pretenured" (its guess for methods
 * put on prototypes), and such a closure is allocated in the old generation. Effect builds one on every
 * `Effect.async` (its register, whose context holds the resume callback and so the fiber), every internal
 * `asyncInterrupt` (`Deferred.await`, `Effect.sleep`), every `Effect.uninterruptible`/`uninterruptibleMask` and a few
 * channel operations. The closure is garbage soon after, but a young-generation collection takes every old object as
 * live, so the young context it points at (and the fiber, its stack and the request's data behind it) survives and is
 * promoted; only a full collection frees it. Measured on the server at a steady 100 ingest requests/s with their
 * deliveries: 30–38 MB promoted in 10 s before, 15–16 MB after, scavenge pauses 181–224 → 111–135 ms
 * (`bench/support/promotionRepro.mjs` shows it on a bare `node:http` server). The rewrite changes no behaviour: the
 * same closure, allocated in the young generation like any other.
 *
 * It patches only effect 3.x files it recognizes, is idempotent, and never fails the install: an Effect release that
 * changes these lines is reported, and `test/install/EffectPretenuring.test.ts` fails until this is looked at.
 * `--check` only reports (exit 1 if a pretenured assignment is left).
 */
/* global console, process */
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

const files = ["internal/core.js", "internal/core-stream.js"].flatMap((
  file
) => [`dist/esm/${file}`, `dist/cjs/${file}`])

// `effect.effect_instruction_i1 = () => self;` or the first line of a multi-line one ending in `{`.
const assignment = /^(\s+)((?:effect|op)\.([A-Za-z_$][\w$]*)) = ((?:\([^)]*\)|[A-Za-z_$][\w$]*) =>.*|function\b.*)$/

/** The file's text with every such assignment bound to a name first, and how many were rewritten. */
const rewrite = (text) => {
  const lines = text.split("\n")
  const out = []
  let rewritten = 0
  for (let i = 0; i < lines.length; i++) {
    const match = assignment.exec(lines[i])
    if (match === null) {
      out.push(lines[i])
      continue
    }
    const [, indent, target, property, literal] = match
    const name = `${property}Literal`
    out.push(`${indent}const ${name} = ${literal}`)
    if (!literal.endsWith(";")) {
      // A multi-line literal ends at the first line that closes it at the assignment's own indentation.
      const end = lines.findIndex((line, j) => j > i && line === `${indent}};`)
      if (end === -1) throw new Error(`no end for the literal at line ${i + 1}`)
      out.push(...lines.slice(i + 1, end + 1))
      i = end
    }
    out.push(`${indent}${target} = ${name};`)
    rewritten++
  }
  return { text: out.join("\n"), rewritten }
}

const effectRoot = () => dirname(createRequire(import.meta.url).resolve("effect/package.json"))

const main = () => {
  const check = process.argv.includes("--check")
  let root
  try {
    root = effectRoot()
  } catch {
    console.warn("effect-pretenuring: effect is not installed; nothing to do")
    return 0
  }
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
  if (!version.startsWith("3.")) {
    console.warn(`effect-pretenuring: effect ${version} is not a 3.x release; left as it is`)
    return check ? 1 : 0
  }
  let left = 0
  let patched = 0
  for (const file of files) {
    const path = join(root, file)
    let text
    try {
      text = readFileSync(path, "utf8")
    } catch {
      console.warn(`effect-pretenuring: ${file} not found in effect ${version}`)
      left++
      continue
    }
    let result
    try {
      result = rewrite(text)
    } catch (error) {
      console.warn(`effect-pretenuring: ${file} of effect ${version} not understood (${error.message}); left as it is`)
      left++
      continue
    }
    if (result.rewritten === 0) continue
    if (check) {
      console.warn(`effect-pretenuring: ${result.rewritten} pretenured closures left in ${file}`)
      left += result.rewritten
    } else {
      writeFileSync(path, result.text)
      patched += result.rewritten
    }
  }
  if (!check) console.log(`effect-pretenuring: ${patched} closures rewritten in effect ${version}`)
  return check && left > 0 ? 1 : 0
}

process.exitCode = main()
