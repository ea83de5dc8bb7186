import { Data, Effect, Result, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { decodeWithIssues } from "../domain/Issues.js"
import { SourceConfig, webhooksDestinationId } from "../domain/Settings.js"
import { BlockedEndpoints, checkSource, currentOrDefault as currentEgressPolicy } from "../network/EgressPolicy.js"
import { RelaySources, type SavedSource } from "../relay/Relay.js"

/** The `HOOKRELAY_CONFIG` file: sources to create or update at start (REFERENCE §7). */
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
    return yield* Result.match(decodeFile(json), {
      onFailure: (issues) =>
        Effect.fail(
          new InvalidConfigFile({ path, problems: issues.map((issue) => `${issue.path}: ${issue.message}`) })
        ),
      onSuccess: Effect.succeed
    })
  })

const refused = (path: string, blocked: BlockedEndpoints) =>
  new InvalidConfigFile({ path, problems: blocked.errors.map((issue) => `${issue.path}: ${issue.message}`) })

/**
 * The SSRF guard's save-time check (REFERENCE §8) of every source of the file, before any is stored: each refused endpoint
 * URL, of the `webhooks` object or of any destination, is a problem naming its field
 * (`sources[1].webhooks.endpoints[0].url`, `sources[0].destinations[2].endpoints[0].url`).
 */
export const checkProvisioningFile = (path: string, file: ProvisioningFile): Effect.Effect<void, InvalidConfigFile> =>
  Effect.gen(function*() {
    const egress = yield* currentEgressPolicy
    const checks = yield* Effect.forEach(
      file.sources,
      (source, index) => Effect.result(checkSource(egress, source, `sources[${index}].`)),
      { concurrency: "unbounded" }
    )
    const errors = checks.flatMap((check) => Result.isFailure(check) ? check.failure.errors : [])
    if (errors.length > 0) return yield* Effect.fail(refused(path, new BlockedEndpoints({ errors })))
  })

/** The ids of the destinations whose Standard Webhooks secret this save generated, `webhooks` first. */
const generatedSecretsOf = (saved: SavedSource): ReadonlyArray<string> => [
  ...(saved.generatedSecret === undefined ? [] : [webhooksDestinationId]),
  ...Object.keys(saved.generatedSecrets ?? {})
]

const rotatePath = (sourceId: string, destinationId: string) =>
  destinationId === webhooksDestinationId
    ? `/admin/sources/${sourceId}/secrets/rotate`
    : `/admin/sources/${sourceId}/destinations/${destinationId}/secrets/rotate`

/**
 * Upserts every source of the file through the Relay, as the admin API would. A file with a refused endpoint URL
 * stores nothing.
 */
export const provision = (path: string) =>
  Effect.gen(function*() {
    const relaySources = yield* RelaySources
    const file = yield* readProvisioningFile(path)
    yield* checkProvisioningFile(path, file)
    for (const [index, source] of file.sources.entries()) {
      const saved = yield* relaySources.putSource(source).pipe(
        Effect.catchTag("BlockedEndpoints", (blocked) =>
          Effect.fail(refused(
            path,
            new BlockedEndpoints({
              errors: blocked.errors.map((issue) => ({ ...issue, path: `sources[${index}].${issue.path}` }))
            })
          )))
      )
      // The generated secrets themselves are never logged: a rotation is how the operator gets one to hand out.
      yield* Effect.forEach(generatedSecretsOf(saved), (destinationId) =>
        Effect.logWarning(
          `source ${source.id}: a Standard Webhooks signing secret was generated for destination ${destinationId}; ` +
            `give signingSecrets in ${path}, or rotate it (POST ${
              rotatePath(source.id, destinationId)
            }) to be shown one`
        ))
    }
    yield* Effect.logInfo(`provisioned ${file.sources.length} sources from ${path}`)
  })
