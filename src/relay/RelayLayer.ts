import { type Duration, Effect, Layer, Option, Redacted, Result } from "effect"
import * as Dispatcher from "../delivery/Dispatcher.js"
import * as EndpointGuards from "../delivery/EndpointGuards.js"
import * as OperatorWebhook from "../delivery/OperatorWebhook.js"
import * as Outcomes from "../delivery/Outcomes.js"
import * as Transport from "../delivery/Transport.js"
import * as BacklogGauge from "../metrics/BacklogGauge.js"
import * as EgressPolicy from "../network/EgressPolicy.js"
import * as IngestAdmission from "../overload/IngestAdmission.js"
import * as IngestPressure from "../overload/IngestPressure.js"
import type { OverloadOptions } from "../overload/OverloadConfig.js"
import * as OutboxSignal from "../store/OutboxSignal.js"
import { layerRetention } from "../store/Retention.js"
import { makeSecretBox, parseSecretKeys, SecretBox } from "../store/SecretBox.js"
import * as SettingsVersion from "../store/SettingsVersion.js"
import type { StoreServices } from "../store/Store.js"
import * as StoreLayers from "../store/Store.js"
import { defaultRetention, postgresUrlConfig } from "../store/StoreConfig.js"
import { StoreError } from "../store/StoreError.js"
import * as StoreHealth from "../store/StoreHealth.js"
import type { RelayServices } from "./Relay.js"
import * as RelayLive from "./RelayLive.js"

export interface EngineOptions {
  /** The dispatcher's tuning, or `false` to only ingest (another process delivers). Default: on. */
  readonly dispatcher?: Dispatcher.DispatcherOptions | false | undefined
  /** The HTTP client of deliveries (extra CAs, timeout). */
  readonly transport?: Transport.TransportOptions | undefined
  /**
   * Allow webhooks to loopback, private, link-local and other internal addresses (REFERENCE §8), at
   * delivery and when settings are saved. Default: the `HOOKRELAY_ALLOW_PRIVATE_NETWORKS`
   * setting (Effect `Config`), false when unset.
   */
  readonly allowPrivateNetworks?: boolean | undefined
  /** How long delivered jobs and their attempts are kept. Default 7 days. */
  readonly retention?: Duration.Input | undefined
  /** When ingest answers `Overloaded` (503): backlog bound, concurrent commits, admission wait. */
  readonly overload?: OverloadOptions | undefined
  /** Where endpoint events and rolled-up dead letters go, signed (`HOOKRELAY_OPERATOR_WEBHOOK`). Default: logs only. */
  readonly operatorWebhook?: OperatorWebhook.OperatorWebhookOptions | undefined
  /**
   * How an admin write reaches the other processes' settings (`SettingsVersion`): `layerPg` shares it through the
   * database; with `Store.layerFromConfig`, pass `settingsVersionFromConfig`. Default: in memory (one process).
   */
  readonly settingsVersion?: Layer.Layer<SettingsVersion.SettingsVersion, StoreError> | undefined
  /**
   * The keys that seal the stored secrets, in `HOOKRELAY_SECRET_KEYS`' form (`id:base64` of 32 bytes, comma-separated;
   * the first seals, all open: docs/SECURITY.md). Default: none, and the secrets are stored as given (the server
   * always seals them). Keys that do not parse, or that cannot open what is stored, fail the layer.
   */
  readonly secretKeys?: Redacted.Redacted<string> | string | undefined
}

/** The store sealing its secrets with `keys`, when given. */
const sealedWith = <E, R>(
  store: Layer.Layer<StoreServices, E, R>,
  keys: EngineOptions["secretKeys"]
): Layer.Layer<StoreServices, E | StoreError, R> => {
  if (keys === undefined) return store
  const parsed = parseSecretKeys(Redacted.isRedacted(keys) ? Redacted.value(keys) : keys)
  return Result.isFailure(parsed)
    ? Layer.effectContext(
      Effect.fail(new StoreError({ operation: "open", cause: new Error(`secretKeys: ${parsed.failure}`) }))
    )
    : Layer.provide(store, Layer.succeed(SecretBox)(makeSecretBox(parsed.success)))
}

/** The settings version that goes with the store `Store.layerFromConfig` picks: shared on PostgreSQL. */
export const settingsVersionFromConfig: Layer.Layer<SettingsVersion.SettingsVersion, StoreError> = Layer.unwrap(
  Effect.map(
    Effect.orElseSucceed(
      Effect.gen(function*() {
        return yield* postgresUrlConfig
      }),
      () => Option.none<Redacted.Redacted>()
    ),
    Option.match({
      onNone: () => SettingsVersion.layerLocal,
      onSome: (url) => SettingsVersion.layerPg({ url })
    })
  )
)

/** The whole engine over a store layer: the `Relay` services, the dispatcher, retention and the backlog gauge. */
export const layerEngine = <E, R>(
  store: Layer.Layer<StoreServices, E, R>,
  options: EngineOptions = {}
): Layer.Layer<RelayServices, E | StoreError, R> => {
  const background = Layer.mergeAll(
    options.dispatcher === false ? Layer.empty : Dispatcher.layer(options.dispatcher),
    layerRetention({ retention: options.retention ?? defaultRetention }),
    BacklogGauge.layer()
  )
  // One SSRF guard for the transport and the save-time check of `putSource`.
  const egress = EgressPolicy.layer({
    allowPrivateNetworks: options.allowPrivateNetworks ?? options.transport?.allowPrivateNetworks
  })
  // Built after the store (its migrations made the version row), shared by ingest, the admin and the dispatcher.
  const settingsVersion = options.settingsVersion ?? SettingsVersion.layerLocal
  const services = Layer.mergeAll(
    Transport.layerWithPolicy(options.transport),
    settingsVersion,
    OutboxSignal.layer,
    Outcomes.layer,
    IngestPressure.layer()
  )
    .pipe(
      Layer.provideMerge(egress),
      // Every store call reports to `StoreHealth`: readiness, and one log line per outage.
      Layer.provideMerge(StoreHealth.layerOver(sealedWith(store, options.secretKeys)))
    )
  // The URLs' circuits and health, shared by the dispatcher and the health queries of `RelayEndpoints`.
  const sink = options.operatorWebhook === undefined ? Layer.empty : OperatorWebhook.layer(options.operatorWebhook)
  const guards = EndpointGuards.layer.pipe(Layer.provide(sink), Layer.provideMerge(services))
  return Layer.merge(RelayLive.layer, background).pipe(
    Layer.provide(IngestAdmission.layer(options.overload).pipe(Layer.provideMerge(guards)))
  )
}

/** The engine on an embedded SQLite file (`<directory>/hookrelay.db`, default `./data`). One process per file. */
export const layerSqlite = (
  options: StoreLayers.SqliteOptions & EngineOptions = {}
): Layer.Layer<RelayServices, StoreError> => layerEngine(StoreLayers.layerSqlite(options), options)

/** The engine on PostgreSQL: several processes may share the database and its jobs. */
export const layerPg = (options: StoreLayers.PgOptions & EngineOptions): Layer.Layer<RelayServices, StoreError> =>
  layerEngine(StoreLayers.layerPg(options), {
    ...options,
    settingsVersion: options.settingsVersion ?? SettingsVersion.layerPg({ url: options.url, schema: options.schema })
  })
