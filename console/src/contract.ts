import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { AdminContract } from "../../src/ingest/AdminContract.js"

// The admin API's contract (src/ingest/AdminContract.ts) as types: an endpoint's group, method,
// parameters, body and answer, by the endpoint's name. Types only: nothing of effect is bundled.

type Groups = typeof AdminContract extends HttpApi.HttpApi<infer _Id, infer G> ? G : never
type Endpoints = HttpApiGroup.Endpoints<Groups>
type Endpoint<N extends EndpointName> = HttpApiEndpoint.WithIdentifier<Endpoints, N>

export type EndpointName = HttpApiEndpoint.Identifier<Endpoints>

type GroupOfIn<N extends EndpointName, G> = G extends HttpApiGroup.Constraint
  ? N extends HttpApiEndpoint.Identifier<HttpApiGroup.Endpoints<G>> ? HttpApiGroup.Identifier<G>
  : never
  : never
export type GroupOf<N extends EndpointName> = GroupOfIn<N, Groups>

export type MethodOf<N extends EndpointName> = Endpoint<N>["method"]

/** Path and query parameters: every one of the contract's is a string on both sides. */
export type PathOf<N extends EndpointName> = HttpApiEndpoint.Params<Endpoint<N>>["Type"]
export type QueryOf<N extends EndpointName> = HttpApiEndpoint.Query<Endpoint<N>>["Type"]

/** Where a call goes: its endpoint's group, method and path (`/admin/sources/:sourceId`). */
export interface Route<N extends EndpointName> {
  readonly group: GroupOf<N>
  readonly method: MethodOf<N>
  readonly path: `/admin/${string}`
}

/** What a call sends and gets as JSON: the Encoded side of the endpoint's schemas. */
export interface Wire {
  readonly body?: unknown
  readonly answer: unknown
}

type Same<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false
type BodyOf<W extends Wire> = W extends { readonly body: infer B } ? B : never

/**
 * The endpoint's payload and success as the contract types them (the decoded side), which the wire
 * shapes must equal: another schema on an endpoint, or a transformation that makes a schema's two
 * sides differ, fails to compile where the console declares its wire shapes.
 */
type SuccessOf<N extends EndpointName> = HttpApiEndpoint.Success<Endpoint<N>>["Type"]
type PayloadOf<N extends EndpointName> = HttpApiEndpoint.Payload<Endpoint<N>>["Type"]

type Agreeing<N extends EndpointName, W extends Wire> = Same<W["answer"], SuccessOf<N>> extends true
  ? Same<BodyOf<W>, PayloadOf<N>> extends true ? W
  : { readonly body: PayloadOf<N>; readonly answer: W["answer"] }
  : { readonly answer: SuccessOf<N> }

/** The console's wire shapes by endpoint name, each checked against its endpoint. */
export type CheckedWires<
  W extends {
    readonly [N in keyof W]: N extends EndpointName ? W[N] extends Wire ? Agreeing<N, W[N]> : Wire
      : "not an admin endpoint"
  }
> = W
