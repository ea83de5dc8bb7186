import { Data, Effect, Either, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { decodeWithIssues } from "../domain/Issues.js"
import { SourceConfig } from "../domain/Settings.js"
import { Relay } from "../relay/Relay.js"

/** The `HOOKRELAY_CONFIG` file: sources to create or update at start (SPEC §7). */
export const ProvisioningFile = Schema.Struct({ sources: Schema.Array(SourceConfig) })
export type ProvisioningFile = typeof ProvisioningFile.Type

export class InvalidConfigFile extends Data.TaggedError("InvalidConfigFile")<{
  readonly path: string
  readonly problems: ReadonlyArray<string>
}> {
  override get message() {
    return `${this.path} is not a valid hookrelay config: ${this.problems.join("; ")}`
  }
}

const decodeFile = decodeWithIssues(ProvisioningFile)

export const readProvisioningFile = (path: string): Effect.Effect<ProvisioningFile, InvalidConfigFile> =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (cause) => new InvalidConfigFile({ path, problems: [`cannot be read (${(cause as Error).message})`] })
    })
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new InvalidConfigFile({ path, problems: ["is not valid JSON"] })
    })
    return yield* Either.match(decodeFile(json), {
      onLeft: (issues) =>
        Effect.fail(
          new InvalidConfigFile({ path, problems: issues.map((issue) => `${issue.path}: ${issue.message}`) })
        ),
      onRight: Effect.succeed
    })
  })

/** Upserts every source of the file through the Relay, as the admin API would. */
export const provision = (path: string) =>
  Effect.gen(function*() {
    const relay = yield* Relay
    const file = yield* readProvisioningFile(path)
    for (const source of file.sources) yield* relay.putSource(source)
    yield* Effect.logInfo(`provisioned ${file.sources.length} sources from ${path}`)
  })
