import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type { Scope } from "effect"
import { HttpServer } from "effect/http"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import * as Dispatcher from "../../src/delivery/Dispatcher.js"
import * as EndpointGuards from "../../src/delivery/EndpointGuards.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import * as Transport from "../../src/delivery/Transport.js"
import * as Server from "../../src/ingest/Server.js"
import * as BacklogGauge from "../../src/metrics/BacklogGauge.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import * as IngestAdmission from "../../src/overload/IngestAdmission.js"
import * as IngestPressure from "../../src/overload/IngestPressure.js"
import type { OverloadOptions } from "../../src/overload/OverloadConfig.js"
import {
  Relay,
  RelayAudiences,
  RelayDestinations,
  RelayEndpoints,
  RelayMessages,
  RelaySources
} from "../../src/relay/Relay.js"
import * as RelayLive from "../../src/relay/RelayLive.js"
import { AudienceMembers } from "../../src/store/AudienceMembers.js"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { DeletionRequests } from "../../src/store/DeletionRequests.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import type { StoreServices } from "../../src/store/Store.js"

export const adminToken = "admin-token-for-tests-0123456789"

export interface AppOptions {
  /** Run the dispatcher (default true). */
  readonly dispatch?: boolean | undefined
  readonly admin?: boolean | undefined
  /** A store layer to use instead of a fresh SQLite file. */
  readonly store?: Layer.Layer<StoreServices, unknown> | undefined
  readonly dispatcher?: Dispatcher.DispatcherOptions | undefined
  /** The SSRF guard of deliveries and saved settings (default: from HOOKRELAY_ALLOW_PRIVATE_NETWORKS, true in tests). */
  readonly egress?: Layer.Layer<EgressPolicy.EgressPolicy> | undefined
  /** Ingest admission bounds (default: the engine's defaults). */
  readonly overload?: OverloadOptions | undefined
  /**
   * The ingest pressure gauge (default: the engine's defaults). Under TestClock each of its samples is a step of every
   * adjustment (a minute is 1 200 of them at the default 50 ms): tests that move the clock far may sample less often.
   */
  readonly pressure?: IngestPressure.IngestPressureOptions | undefined
}

/** A temporary directory removed when the scope closes. */
export const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(Path.join(tmpdir(), "hookrelay-test-"))),
  (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
)

/**
 * The whole server as users run it — SQLite file, dispatcher, HTTP on 127.0.0.1:0 — in a scope.
 * Returns its base URL and the services behind it.
 */
export const startApp = (options: AppOptions = {}) =>
  Effect.gen(function*() {
    const directory = yield* tempDirectory
    const store = options.store ?? StoreLayers.layerSqlite({ directory })
    const base = IngestAdmission.layer(options.overload).pipe(
      // The URLs' circuits and health, shared by the dispatcher and RelayEndpoints' health queries.
      Layer.provideMerge(EndpointGuards.layer),
      Layer.provideMerge(
        Layer.mergeAll(
          Transport.layerWithPolicy(),
          OutboxSignal.layer,
          Outcomes.layer,
          IngestPressure.layer(options.pressure)
        )
      ),
      Layer.provideMerge(options.egress ?? EgressPolicy.layer()),
      Layer.provideMerge(store)
    )
    const engine = (options.dispatch ?? true)
      ? Layer.mergeAll(RelayLive.layer, Dispatcher.layer(options.dispatcher), BacklogGauge.layer()).pipe(
        Layer.provideMerge(base)
      )
      : Layer.merge(RelayLive.layer, BacklogGauge.layer()).pipe(Layer.provideMerge(base))
    const http = Server.layer({
      adminToken: (options.admin ?? true) ? Option.some(Redacted.make(adminToken)) : Option.none()
    }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(engine)
    )
    const context = yield* Layer.build(http)
    const address = Context.get(context, HttpServer.HttpServer).address
    const baseUrl = address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${address.port}`
    return {
      baseUrl,
      relay: Context.get(context, Relay),
      relaySources: Context.get(context, RelaySources),
      relayMessages: Context.get(context, RelayMessages),
      relayEndpoints: Context.get(context, RelayEndpoints),
      relayAudiences: Context.get(context, RelayAudiences),
      relayDestinations: Context.get(context, RelayDestinations),
      // The store's services the tests read behind the API.
      outbox: Context.get(context, Outbox),
      sources: Context.get(context, Sources),
      messageLog: Context.get(context, MessageLog),
      deadLetters: Context.get(context, DeadLetters),
      deletionRequests: Context.get(context, DeletionRequests),
      audienceMembers: Context.get(context, AudienceMembers),
      directory
    }
  })

export type App = Effect.Success<ReturnType<typeof startApp>>
export type AppScope = Scope.Scope
