import { describe, expect, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { adminApi } from "../../src/ingest/AdminApi.js"
import { RelayAccess, type RelayAccessShape } from "../../src/relay/Relay.js"
import { adminToken, startApp } from "../support/app.js"
import { call } from "../support/http.js"

/**
 * `/admin/openapi.json` (REFERENCE §7): valid OpenAPI 3.1 by a validator package, naming exactly the
 * routes the server serves, and true of them: requests built from the document get answers its
 * schemas accept.
 */

type Operation = {
  readonly operationId: string
  readonly parameters?: ReadonlyArray<{ readonly name: string; readonly in: string }>
  readonly requestBody?: { readonly content: Record<string, { readonly schema: unknown }> }
  readonly responses: Record<string, { readonly content?: Record<string, { readonly schema: unknown }> }>
}
type Document = {
  readonly openapi: string
  readonly paths: Record<string, Record<string, Operation>>
  readonly components: { readonly schemas: Record<string, unknown> }
}

const fetchDocument = Effect.gen(function*() {
  const app = yield* startApp({ dispatch: false })
  const answer = yield* call(app.baseUrl, "GET", "/admin/openapi.json")
  expect(answer.status).toBe(200)
  expect(answer.headers.get("content-type")).toContain("application/json")
  return { app, document: answer.body as Document }
})

/** Every operation of the document, found by its operationId, with a checker for its answers. */
const operations = (document: Document) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ajv.addSchema({ $id: "doc", components: document.components })
  const rewrite = (schema: unknown): unknown =>
    JSON.parse(JSON.stringify(schema).replaceAll("\"#/components/", "\"doc#/components/"))
  const byId = new Map<string, { method: string; path: string; operation: Operation }>()
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) byId.set(operation.operationId, { method, path, operation })
  }
  return (operationId: string) => {
    const found = byId.get(operationId)
    if (found === undefined) throw new Error(`no operation ${operationId}`)
    const { method, operation, path } = found
    return {
      /** The request: method and path with its parameters filled in, as the document names them. */
      request: (values: Record<string, string>, query: Record<string, string> = {}) => {
        const params = operation.parameters ?? []
        const filled = params.filter((p) => p.in === "path").reduce(
          (current, p) => current.replace(`{${p.name}}`, encodeURIComponent(values[p.name]!)),
          path
        )
        const known = new Set(params.filter((p) => p.in === "query").map((p) => p.name))
        for (const name of Object.keys(query)) expect(known.has(name), `query parameter ${name}`).toBe(true)
        const search = new URLSearchParams(query).toString()
        return { method: method.toUpperCase(), path: search === "" ? filled : `${filled}?${search}` }
      },
      /** The body is valid for the operation's request schema. */
      acceptsBody: (body: unknown) => {
        const schema = operation.requestBody?.content["application/json"]?.schema
        expect(schema).toBeDefined()
        const validate = ajv.compile(rewrite(schema) as object)
        expect(validate(body), JSON.stringify(validate.errors)).toBe(true)
      },
      /** The answer's status is one the document lists, and its body matches that response's schema. */
      answers: (answer: { status: number; body: unknown }) => {
        const response = operation.responses[String(answer.status)]
        expect(response, `${operationId} answered ${answer.status}`).toBeDefined()
        const schema = response!.content?.["application/json"]?.schema
        if (schema === undefined) return
        const validate = ajv.compile(rewrite(schema) as object)
        expect(validate(answer.body), `${operationId} ${answer.status}: ${JSON.stringify(validate.errors)}`).toBe(true)
      }
    }
  }
}

/** The routes a layer adds to its `HttpRouter`: what a server given that layer serves. */
const routesAdded = <E, R>(routes: Layer.Layer<never, E, R>) =>
  Effect.gen(function*() {
    const added: Array<HttpRouter.Route<unknown, unknown>> = []
    const router = yield* HttpRouter.make
    const recording = HttpRouter.HttpRouter.of({
      ...router,
      addAll: (all) => Effect.andThen(Effect.sync(() => added.push(...all)), router.addAll(all))
    })
    yield* HttpRouter.toHttpEffect(Layer.provide(routes, Layer.succeed(HttpRouter.HttpRouter)(recording)))
    return added
  })

describe("admin API: OpenAPI document", () => {
  it.live("is valid OpenAPI 3.1 according to a validator", () =>
    Effect.gen(function*() {
      const { document } = yield* fetchDocument
      expect(document.openapi).toBe("3.1.0")
      const result = yield* Effect.promise(() => new Validator().validate(document as Record<string, unknown>))
      expect(result.errors ?? []).toEqual([])
      expect(result.valid).toBe(true)
    }))

  it.live("lists exactly the admin routes the server serves, each behind the bearer token", () =>
    Effect.gen(function*() {
      const { app, document } = yield* fetchDocument
      const token = Option.some(Redacted.make(adminToken))
      // The routes only are listed: no request reaches the key store.
      const noKeys = Layer.succeed(RelayAccess)({} as RelayAccessShape)
      const served = (yield* routesAdded(adminApi(token).pipe(Layer.provide(noKeys))))
        .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`)
        .sort()
      const documented = Object.entries(document.paths)
        .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
        .sort()
      expect(documented).toEqual(served)
      expect(new Set(served).size).toBe(served.length)
      for (const item of Object.values(document.paths)) {
        for (const operation of Object.values(item)) {
          expect(Object.keys(operation.responses), operation.operationId).toEqual(
            expect.arrayContaining(["401", "404", "503"])
          )
        }
      }
      expect((yield* call(app.baseUrl, "GET", "/admin/openapi.json", { authorization: null })).status).toBe(401)
    }))

  it.live("requests built from the document round-trip: answers match its schemas", () =>
    Effect.gen(function*() {
      const { app, document } = yield* fetchDocument
      const operation = operations(document)
      const send = (request: { method: string; path: string }, body?: unknown) =>
        call(app.baseUrl, request.method, request.path, body === undefined ? {} : { body })

      const settings = {
        writeKey: "wk_openapi_round_trip",
        webhooks: {
          enabled: true,
          sharedSecret: "s3cret-openapi",
          endpoints: [{ url: "https://hooks.example.com/in" }]
        }
      }
      const put = operation("sources.putSource")
      put.acceptsBody(settings)
      const created = yield* send(put.request({ sourceId: "docs" }), settings)
      expect(created.status).toBe(200)
      put.answers(created)
      expect(created.body).toMatchObject({ id: "docs", webhooks: { enabled: true, hasSharedSecret: true } })

      const get = operation("sources.getSource")
      const read = yield* send(get.request({ sourceId: "docs" }))
      get.answers(read)
      expect(read.body).toEqual(created.body)
      const list = operation("sources.listSources")
      const listed = yield* send(list.request({}))
      list.answers(listed)
      expect(listed.body).toEqual({ sources: [created.body] })

      // Errors the document promises, as the server gives them.
      const invalid = yield* send(put.request({ sourceId: "docs" }), { ...settings, writeKey: "has space" })
      expect(invalid.status).toBe(400)
      put.answers(invalid)
      const missing = yield* send(get.request({ sourceId: "nowhere" }))
      expect(missing.status).toBe(404)
      get.answers(missing)
      const usage = operation("sources.sourceUsage")
      const badDays = yield* send(usage.request({ sourceId: "docs" }, { days: "many" }))
      expect(badDays.status).toBe(400)
      usage.answers(badDays)
      const days = yield* send(usage.request({ sourceId: "docs" }, { days: "3" }))
      expect(days.status).toBe(200)
      usage.answers(days)

      for (
        const [operationId, request] of [
          [
            "messages.listMessages",
            operation("messages.listMessages").request({}, { sourceId: "docs", status: "dead", limit: "5" })
          ],
          ["messages.listMessages", operation("messages.listMessages").request({}, { since: "yesterday" })],
          ["sources.sourceMessages", operation("sources.sourceMessages").request({ sourceId: "docs" }, { limit: "5" })],
          ["messages.getMessage", operation("messages.getMessage").request({ messageId: "never-sent" })],
          ["deadLetters.listDeadLetters", operation("deadLetters.listDeadLetters").request({}, { limit: "10" })],
          ["deadLetters.replayDeadLetter", operation("deadLetters.replayDeadLetter").request({ jobId: "no-job" })],
          ["operations.backlog", operation("operations.backlog").request({})],
          ["deletions.getDeletion", operation("deletions.getDeletion").request({ deletionId: "no-deletion" })]
        ] as const
      ) {
        operation(operationId).answers(yield* send(request))
      }

      // A destination's routes: created (201), replaced (200), listed, rotated, deleted (204), each as documented.
      const putDestination = operation("destinations.putDestination")
      const crm = { enabled: true, signing: "standard", endpoints: [{ url: "https://crm.example.com/in" }] }
      putDestination.acceptsBody(crm)
      const destination = { sourceId: "docs", destinationId: "crm" }
      const added = yield* send(putDestination.request(destination), crm)
      expect(added.status).toBe(201)
      putDestination.answers(added)
      const replaced = yield* send(putDestination.request(destination), { ...crm, name: "CRM" })
      expect(replaced.status).toBe(200)
      putDestination.answers(replaced)
      const refused = yield* send(putDestination.request(destination), { ...crm, endpoints: [] })
      expect(refused.status).toBe(400)
      putDestination.answers(refused)
      const rotate = operation("destinations.rotateDestinationSecret")
      rotate.acceptsBody({ keepOldFor: "1 hour" })
      rotate.answers(yield* send(rotate.request(destination), { keepOldFor: "1 hour" }))
      const listDestinations = operation("destinations.listDestinations")
      const destinations = yield* send(listDestinations.request({ sourceId: "docs" }))
      listDestinations.answers(destinations)
      expect(destinations.body.destinations.map(({ id }: { id: string }) => id)).toStrictEqual(["webhooks", "crm"])
      const deleteDestination = operation("destinations.deleteDestination")
      const deleted = yield* send(deleteDestination.request(destination))
      expect(deleted.status).toBe(204)
      deleteDestination.answers(deleted)
      deleteDestination.answers(yield* send(deleteDestination.request(destination)))

      const remove = operation("sources.deleteSource")
      const removed = yield* send(remove.request({ sourceId: "docs" }))
      expect(removed.status).toBe(204)
      remove.answers(removed)
      expect(yield* send(remove.request({ sourceId: "docs" }))).toMatchObject({ status: 404 })
    }))
})
