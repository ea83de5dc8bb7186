import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Layer, Queue } from "effect"
import type { Redacted } from "effect"
import { makeLocal, SettingsVersion, type SettingsVersionShape } from "../SettingsVersion.js"
import { StoreError } from "../StoreError.js"

/** How often the version row is read besides the notifications: the bound on the lag while the listener is down. */
export const settingsPollEvery = Duration.seconds(1)

/** The channel of a schema's settings: replicas of one deployment share a schema, other deployments do not hear it. */
export const settingsChannel = (schema: string) => `hookrelay_settings_${schema}`

/**
 * The settings version shared by the processes of one PostgreSQL deployment. An admin write bumps the row of
 * `settings_version` and notifies the schema's channel in the same statement; every process listens on a connection
 * of its own and, as the fallback for a dropped listener or a lost notification, reads the row every
 * `settingsPollEvery`. A version other than the last one seen moves this process's generation (its caches drop).
 */
const make = (client: PgClient.PgClient) =>
  Effect.gen(function*() {
    const local = makeLocal()
    // The schema the sessions work in (`search_path`, from the options or the URL), as the store's own connections.
    const [current] = yield* client<{ schema: string | null }>`SELECT current_schema() AS schema`
    const channel = settingsChannel(current?.schema ?? "public")
    let seen: string | undefined

    const observe = (version: string): void => {
      if (version === seen) return
      // The first read only learns the version: nothing was cached before it.
      if (seen !== undefined) local.observe()
      seen = version
    }

    const read = client<{ version: string }>`SELECT version::text AS version FROM settings_version WHERE id = 1`.pipe(
      Effect.map((rows) => rows[0]?.version ?? "0")
    )

    const changed = Effect.suspend(() => {
      local.observe()
      return client<{ version: string }>`
        WITH bumped AS (UPDATE settings_version SET version = version + 1 WHERE id = 1 RETURNING version)
        SELECT version::text AS version, pg_notify(${channel}, version::text) FROM bumped`
    }).pipe(
      Effect.tap((rows) => Effect.sync(() => rows[0] !== undefined && (seen = rows[0].version))),
      Effect.asVoid,
      // The write itself is stored: the other processes see it by the caches' time limit.
      Effect.catch((error) => Effect.logError("could not announce a settings change to the other processes", error))
    )

    // One listening session at a time; after it drops, a new one once a second (the poll covers the gap).
    let listenerFailed = false
    const listen = Effect.scoped(Effect.gen(function*() {
      const notifications = yield* client.listen(channel)
      if (listenerFailed) yield* Effect.logInfo("listening to settings changes again")
      listenerFailed = false
      observe(yield* read)
      while (true) observe((yield* Queue.take(notifications)).payload)
    })).pipe(
      Effect.catch((error) =>
        listenerFailed
          ? Effect.void
          : Effect.andThen(
            Effect.sync(() => (listenerFailed = true)),
            Effect.logWarning("not listening to settings changes; reading the version every second", error)
          )
      ),
      Effect.andThen(Effect.sleep(settingsPollEvery)),
      Effect.forever
    )
    const poll = Effect.forever(Effect.andThen(
      Effect.sleep(settingsPollEvery),
      Effect.ignore(Effect.map(read, observe))
    ))

    observe(yield* Effect.orElseSucceed(read, () => "0"))
    yield* Effect.forkScoped(Effect.interruptible(listen))
    yield* Effect.forkScoped(Effect.interruptible(poll))
    const shape: SettingsVersionShape = { generation: local.generation, changed }
    return shape
  })

export const layer = (options: { readonly url: Redacted.Redacted; readonly schema: string | undefined }) =>
  Layer.effect(SettingsVersion, Effect.flatMap(PgClient.PgClient, make)).pipe(
    Layer.provide(PgClient.layer({
      url: options.url,
      // One session held by the listener, one for the bumps and the polls.
      maxConnections: 2,
      applicationName: "hookrelay-settings",
      startupParameters: options.schema === undefined ? undefined : { search_path: options.schema }
    })),
    Layer.catchCause((cause) =>
      Layer.effect(SettingsVersion, Effect.fail(new StoreError({ operation: "open", cause })))
    )
  )
