import { Config, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { FieldIssue } from "../domain/Issues.js"
import type { SourceConfig } from "../domain/Settings.js"
import { type BlockedRange, blockedRange, ipFamily, privateNetworkRanges, unbracket } from "./AddressPolicy.js"
import { layer as resolverLayer, type ResolvedAddress, type ResolveError, Resolver } from "./Resolver.js"

/**
 * The SSRF guard (REFERENCE §8): where deliveries may connect. Every address a delivery would connect to is checked, after
 * resolution, against `AddressPolicy`; the transport connects only to the addresses checked here. Settings are checked
 * when saved too. `HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true` opens loopback and the private ranges, nothing else.
 */

export const allowPrivateNetworksVariable = "HOOKRELAY_ALLOW_PRIVATE_NETWORKS"

/** `HOOKRELAY_ALLOW_PRIVATE_NETWORKS`: a boolean (`true`/`false`, also `yes`/`no`, `on`/`off`, `1`/`0`), default false. */
export const allowPrivateNetworksConfig: Config.Config<boolean> = Config.Boolean(allowPrivateNetworksVariable).pipe(
  Config.withDefault(false)
)

/** The error code a refused connection carries through undici; attempt classification reads it (permanent). */
export const blockedAddressCode = "BLOCKED_ADDRESS"

/** A delivery would connect to a refused address. `host` is the URL's host, `address` what it is or resolved to. */
export class BlockedAddress extends Data.TaggedError("BlockedAddress")<{
  readonly host: string
  readonly address: string
  readonly range: BlockedRange
}> {
  override get message(): string {
    const what = this.host === this.address
      ? `${this.address} is ${this.range}`
      : `${this.host} resolves to ${this.address}, which is ${this.range}`
    const hint = privateNetworkRanges.has(this.range)
      ? `refused unless ${allowPrivateNetworksVariable}=true`
      : "always refused"
    return `blocked_address: ${what} (${hint})`
  }

  /** The error handed to undici as the connection failure: `code` is what classification reads. */
  toConnectError(): Error & { readonly code: string } {
    return Object.assign(new Error(this.message), { code: blockedAddressCode })
  }
}

/** Settings refused when saved: some endpoint URL points at a refused address. Each issue names the field. */
export class BlockedEndpoints extends Schema.TaggedError<BlockedEndpoints>()("BlockedEndpoints", {
  errors: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return this.errors.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }
}

export interface EgressPolicyShape {
  /** Loopback and the private ranges are open; the other refused ranges stay refused. */
  readonly allowPrivateNetworks: boolean
  /** The refusal of an IP-literal host (brackets allowed), without I/O; `undefined` for allowed ones and names. */
  readonly checkLiteral: (host: string) => BlockedAddress | undefined
  /**
   * The addresses a connection to `hostname` (a name, not a literal) may use: every resolved address, all checked.
   * One refused address refuses the whole answer (a rebinding resolver mixes a public address with a private one).
   */
  readonly resolve: (hostname: string) => Effect.Effect<ReadonlyArray<ResolvedAddress>, BlockedAddress | ResolveError>
  /**
   * The save-time check of one URL: its host, an IP literal or a name resolved now. A name that does not resolve (or
   * not within 2 s) passes: deliveries check again on every connection.
   */
  readonly checkUrl: (url: string) => Effect.Effect<void, BlockedAddress>
}

export class EgressPolicy
  extends Context.Service<EgressPolicy, EgressPolicyShape>()("hookrelay/network/EgressPolicy")
{}

const saveTimeLookupTimeout = "2 seconds"

export const make = (allowPrivateNetworks: boolean): Effect.Effect<EgressPolicyShape, never, Resolver> =>
  Effect.map(Resolver, (resolver) => {
    const refused = (address: string): BlockedRange | undefined => {
      const range = blockedRange(address)
      return range !== undefined && allowPrivateNetworks && privateNetworkRanges.has(range) ? undefined : range
    }
    const checkLiteral = (host: string): BlockedAddress | undefined => {
      const address = unbracket(host)
      const range = refused(address)
      return range === undefined ? undefined : new BlockedAddress({ host: address, address, range })
    }
    const resolve = (hostname: string) =>
      Effect.flatMap(resolver.lookup(hostname), (addresses) => {
        for (const { address } of addresses) {
          const range = refused(address)
          if (range !== undefined) return Effect.fail(new BlockedAddress({ host: hostname, address, range }))
        }
        return Effect.succeed(addresses)
      })
    const checkUrl = (url: string): Effect.Effect<void, BlockedAddress> => {
      if (!URL.canParse(url)) return Effect.void
      const host = new URL(url).hostname
      if (ipFamily(host) !== 0) {
        const blocked = checkLiteral(host)
        return blocked === undefined ? Effect.void : Effect.fail(blocked)
      }
      return resolve(host).pipe(
        Effect.asVoid,
        Effect.timeout(saveTimeLookupTimeout),
        Effect.catchTags({ ResolveError: () => Effect.void, TimeoutError: () => Effect.void })
      )
    }
    return EgressPolicy.of({ allowPrivateNetworks, checkLiteral, resolve, checkUrl })
  })

export interface EgressOptions {
  /**
   * Allow deliveries to loopback, private, link-local and unspecified addresses (the other refused ranges stay
   * refused). Default: the `HOOKRELAY_ALLOW_PRIVATE_NETWORKS` setting (Effect `Config`), false when unset.
   */
  readonly allowPrivateNetworks?: boolean | undefined
}

/** `options.allowPrivateNetworks`, or the `HOOKRELAY_ALLOW_PRIVATE_NETWORKS` setting when it is not given. */
export const allowPrivateNetworks = (options: EgressOptions): Effect.Effect<boolean, Config.ConfigError> =>
  options.allowPrivateNetworks === undefined ? allowPrivateNetworksConfig : Effect.succeed(options.allowPrivateNetworks)

/**
 * The guard over the `Resolver` in context. Without an explicit option it reads `HOOKRELAY_ALLOW_PRIVATE_NETWORKS`; a
 * value that is not a boolean is a defect here (the server reads it as a typed `ConfigError` before, see `main.ts`).
 */
export const layerWithResolver = (options: EgressOptions = {}): Layer.Layer<EgressPolicy, never, Resolver> =>
  Layer.effect(EgressPolicy, Effect.flatMap(Effect.orDie(allowPrivateNetworks(options)), make))

/** The guard over the operating system's resolver. */
export const layer = (options: EgressOptions = {}): Layer.Layer<EgressPolicy> =>
  layerWithResolver(options).pipe(Layer.provide(resolverLayer))

/**
 * The `EgressPolicy` in context, or else the default guard (the setting, the system resolver): for services that
 * must never run unguarded when assembled without the engine's layers.
 */
export const currentOrDefault: Effect.Effect<EgressPolicyShape> = Effect.flatMap(
  Effect.serviceOption(EgressPolicy),
  Option.match({
    onSome: Effect.succeed,
    onNone: () => Effect.provide(Effect.flatMap(Effect.orDie(allowPrivateNetworksConfig), make), resolverLayer)
  })
)

/**
 * The save-time check of a source's destinations (admin API, `Relay.putSource`, `HOOKRELAY_CONFIG`): every endpoint
 * URL of the `webhooks` object and of each listed destination, each refusal naming its field under `pathPrefix`
 * (`webhooks.endpoints[0].url`, `destinations[1].endpoints[0].url`).
 */
export const checkSource = (
  policy: EgressPolicyShape,
  source: Pick<SourceConfig, "webhooks" | "destinations">,
  pathPrefix = ""
): Effect.Effect<void, BlockedEndpoints> => {
  const endpoints = [
    ...(source.webhooks?.endpoints ?? []).map((endpoint, index) => ({
      url: endpoint.url,
      path: `${pathPrefix}webhooks.endpoints[${index}].url`
    })),
    ...(source.destinations ?? []).flatMap((destination, at) =>
      destination.endpoints.map((endpoint, index) => ({
        url: endpoint.url,
        path: `${pathPrefix}destinations[${at}].endpoints[${index}].url`
      }))
    )
  ]
  if (endpoints.length === 0) return Effect.void
  return Effect.forEach(
    endpoints,
    (endpoint) =>
      Effect.match(policy.checkUrl(endpoint.url), {
        onSuccess: () => Option.none<FieldIssue>(),
        onFailure: (blocked) =>
          Option.some<FieldIssue>({
            path: endpoint.path,
            message: blocked.message.replace(/^blocked_address: /, "points at a refused address: ")
          })
      }),
    { concurrency: "unbounded" }
  ).pipe(
    Effect.flatMap((results) => {
      const errors = results.flatMap(Option.toArray)
      return errors.length === 0 ? Effect.void : Effect.fail(new BlockedEndpoints({ errors }))
    })
  )
}
