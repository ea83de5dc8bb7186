import { Context, Data, Effect, Layer } from "effect"
import { lookup } from "node:dns"

/** One address a host name resolved to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/** The name did not resolve. `code` is Node's (`ENOTFOUND`, `EAI_AGAIN`…), what attempt classification reads. */
export class ResolveError extends Data.TaggedError("ResolveError")<{
  readonly hostname: string
  readonly code: string | undefined
  readonly message: string
}> {}

export interface ResolverShape {
  /** Every address of `hostname`, in the resolver's order (at least one). */
  readonly lookup: (hostname: string) => Effect.Effect<ReadonlyArray<ResolvedAddress>, ResolveError>
}

/**
 * Host name resolution for outbound deliveries. Its own service so that the SSRF guard checks exactly the addresses
 * the connection then uses, and so tests can answer with any address (DNS rebinding) without a DNS server.
 */
export class Resolver extends Context.Service<Resolver, ResolverShape>()("hookrelay/network/Resolver") {}

/** The operating system's resolver (`dns.lookup`, all addresses, in its order), as `net.connect` would use it. */
export const make: ResolverShape = {
  lookup: (hostname) =>
    Effect.callback<ReadonlyArray<ResolvedAddress>, ResolveError>((resume) => {
      lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
        if (error !== null) {
          resume(Effect.fail(new ResolveError({ hostname, code: error.code, message: error.message })))
        } else if (addresses.length === 0) {
          resume(Effect.fail(new ResolveError({ hostname, code: "ENOTFOUND", message: `${hostname} has no address` })))
        } else {
          resume(Effect.succeed(addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))))
        }
      })
    })
}

export const layer: Layer.Layer<Resolver> = Layer.succeed(Resolver, make)

/**
 * A resolver from a function: tests answer each look-up (the 1-based call number counts every look-up of any name),
 * e.g. a public address first and a loopback one second.
 */
export const layerTest = (
  answer: (hostname: string, call: number) => Effect.Effect<ReadonlyArray<ResolvedAddress>, ResolveError>
): Layer.Layer<Resolver> =>
  Layer.sync(Resolver, () => {
    let calls = 0
    return Resolver.of({ lookup: (hostname) => Effect.suspend(() => answer(hostname, ++calls)) })
  })
