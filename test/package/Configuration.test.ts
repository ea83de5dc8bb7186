import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Exit, Schema } from "effect"
import { execFile } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { currentTable } from "../../scripts/configTableMarkers.js"
import { declaredEnvironment } from "../../src/config/DeclaredEnvironment.js"
import { markdownTable, otelPrefix, serverEnvironment } from "../../src/config/Environment.js"
import { ProvisioningFile } from "../../src/config/Provisioning.js"
import { repoRoot } from "../support/serverProcess.js"

/**
 * One table of the server's configuration (src/config/Environment.ts): the README's table, `hookrelay --help` and what
 * the server's sources read all agree with it. The client library's own variables (src/client) are not the server's.
 */

/** The server's sources: all of src but the client's and the table itself. */
const excluded = [Path.join(repoRoot, "src/client"), Path.join(repoRoot, "src/config/Environment.ts")]
const sourceFiles = (directory: string): Array<string> =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(directory, entry.name)
    if (excluded.includes(path)) return []
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

/** Every environment variable a server source names: HOOKRELAY_* literals, `Config.…("NAME")`, `process.env.NAME`. */
const namesReadBySources = () => {
  const patterns = [
    /"(HOOKRELAY_[A-Z0-9_]+)"/g,
    /\bConfig\.[A-Za-z]+\((?:[^()"]*,\s*)?"([A-Z][A-Z0-9_]*)"/g,
    /process\.env(?:\.([A-Z][A-Z0-9_]*)|\["([A-Z][A-Z0-9_]*)"\])/g
  ]
  const found = new Map<string, string>()
  for (const file of sourceFiles(Path.join(repoRoot, "src"))) {
    const text = readFileSync(file, "utf8")
    for (const pattern of patterns) {
      for (const match of text.matchAll(pattern)) {
        const name = match[1] ?? match[2]!
        if (!found.has(name)) found.set(name, Path.relative(repoRoot, file))
      }
    }
  }
  return found
}

const declared = serverEnvironment.map((variable) => variable.name)

describe("the server's configuration table", () => {
  it("is the README's configuration table (npm run config:table writes it)", () => {
    const readme = readFileSync(Path.join(repoRoot, "README.md"), "utf8")
    expect(currentTable(readme)).toBe(markdownTable())
  })

  it("lists every variable a server source reads, and each one it lists is read", () => {
    const read = namesReadBySources()
    const unlisted = [...read].filter(([name]) => !name.startsWith(otelPrefix) && !declared.includes(name))
    expect(unlisted.map(([name, file]) => `${name} (${file})`)).toEqual([])
    // OTEL_* names are composed per signal (src/telemetry/OtlpTarget.ts): the group is what the table promises.
    expect(declared.filter((name) => !name.startsWith(otelPrefix) && !read.has(name))).toEqual([])
    // The scan finds what it looks for: the operator webhook's pair, read in src/delivery.
    expect(read.get("HOOKRELAY_OPERATOR_WEBHOOK_SECRET")).toBe("src/delivery/OperatorWebhook.ts")
  })

  it("is what `hookrelay --help` prints", async () => {
    const help = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "src/cli.ts", "--help"],
        { cwd: repoRoot },
        (error, stdout) =>
          error === null ? resolve(stdout) : reject(new Error(`hookrelay --help failed: ${error.message}`))
      )
    )
    const lines = help.split("\n")
    for (const variable of serverEnvironment) {
      const line = lines.find((candidate) => candidate.trimStart().startsWith(`${variable.name} `))
      expect(line, variable.name).toContain(variable.summary)
      if (variable.default !== "unset") expect(line, variable.name).toContain(`(${variable.default})`)
    }
    expect(help).toContain(`${otelPrefix}*`)
  })

  it.effect("is all the server can read: another variable stops the start with its name", () =>
    Effect.gen(function*() {
      const provider = declaredEnvironment(
        ConfigProvider.fromEnv({ env: { PORT: "9090", OTEL_SERVICE_NAME: "relay", HOOKRELAY_UNDECLARED: "x" } })
      )
      const read = <A>(config: Config.Config<A>) =>
        Effect.exit(Effect.provideService(config, ConfigProvider.ConfigProvider, provider))
      expect(yield* read(Config.Port("PORT"))).toStrictEqual(Exit.succeed(9090))
      expect(yield* read(Config.String("OTEL_SERVICE_NAME"))).toStrictEqual(Exit.succeed("relay"))
      const undeclared = yield* read(Config.String("HOOKRELAY_UNDECLARED"))
      expect(Exit.isFailure(undeclared) && String(undeclared.cause)).toContain(
        "HOOKRELAY_UNDECLARED is not in the server's configuration table"
      )
    }))

  it("has a sample config whose Segment shared secret is not a Standard Webhooks secret", () => {
    const sample = Schema.decodeUnknownSync(ProvisioningFile)(
      JSON.parse(readFileSync(Path.join(repoRoot, "examples/config.sample.json"), "utf8"))
    )
    const secrets = sample.sources.map((source) => source.webhooks?.sharedSecret)
    expect(secrets.length).toBeGreaterThan(0)
    // X-Signature is HMAC-SHA1 keyed by the shared secret; `whsec_` names Standard Webhooks' own secrets.
    for (const secret of secrets) expect(secret).toMatch(/^(?!whsec_)\S+$/)
  })
})
