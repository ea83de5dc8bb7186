import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import * as Path from "node:path"
import { InvalidConfigFile, provision } from "../../src/config/Provisioning.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { RelaySources } from "../../src/relay/Relay.js"
import { startApp, tempDirectory } from "../support/app.js"
import { call } from "../support/http.js"
import { alwaysRefused, cases, egress, hint, scriptedDns } from "./ssrfSupport.js"

/**
 * The SSRF guard when settings are saved (REFERENCE §8): admin API, `RelaySources.putSource` and `HOOKRELAY_CONFIG` refuse an
 * endpoint URL that points at a refused address, naming the field.
 */

describe("SSRF guard when settings are saved", () => {
  const settings = (...urls: ReadonlyArray<string>) => ({
    writeKey: "wk_saved",
    webhooks: { enabled: true, endpoints: urls.map((url) => ({ url })) }
  })

  it.live("PUT /admin/sources refuses internal URLs with a 400 naming the field, and stores nothing", () =>
    Effect.gen(function*() {
      const dns = scriptedDns()
      const app = yield* startApp({ egress: egress(false, dns.layer), dispatch: false })
      for (const { host, reason } of cases.filter((entry) => entry.host !== "rebind.test")) {
        const url = `http://${host}:9000/hook`
        const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", { body: settings(url) })
        expect(answer.status, url).toBe(400)
        expect(answer.body, url).toStrictEqual({
          success: false,
          code: "invalid_settings",
          message: `webhooks.endpoints[0].url: points at a refused address: ${reason}${hint}`,
          errors: [{
            path: "webhooks.endpoints[0].url",
            message: `points at a refused address: ${reason}${hint}`
          }]
        })
      }
      // Every refused endpoint is named, the allowed ones are not.
      const several = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("https://hooks.example.com/in", "http://10.1.2.3/in", "https://nowhere.test/in", "http://[::1]/")
      })
      expect(several.status).toBe(400)
      expect(several.body.errors.map((issue: { path: string }) => issue.path)).toStrictEqual([
        "webhooks.endpoints[1].url",
        "webhooks.endpoints[3].url"
      ])
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/saved")).status).toBe(404)
      expect(yield* app.relaySources.listSources).toStrictEqual([])

      // A name that does not resolve now is accepted: delivery checks again. So is a public address.
      const unresolved = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("https://nowhere.test/in", "https://93.184.216.34/in")
      })
      expect(unresolved.status).toBe(200)
    }))

  it.live("refuses localhost through the system resolver, and the library's putSource refuses too", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: EgressPolicy.layer({ allowPrivateNetworks: false }), dispatch: false })
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("http://localhost:9000/hook")
      })
      expect(answer.status).toBe(400)
      expect(answer.body.errors).toMatchObject([{ path: "webhooks.endpoints[0].url" }])
      expect(answer.body.errors[0].message).toMatch(/^points at a refused address: localhost resolves to/)

      const error = yield* app.relaySources.putSource({ id: "lib", ...settings("http://192.168.1.1/") }).pipe(
        Effect.flip
      )
      expect(error).toStrictEqual(
        new EgressPolicy.BlockedEndpoints({
          errors: [{
            path: "webhooks.endpoints[0].url",
            message: `points at a refused address: 192.168.1.1 is private${hint}`
          }]
        })
      )
      expect(yield* app.relaySources.listSources).toStrictEqual([])
    }))

  it.live("accepts the same URLs with the escape hatch", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: egress(true, scriptedDns().layer), dispatch: false })
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("http://127.0.0.1:9000/hook", "http://[fc00::1]/", "http://loopback.test/", "http://0.0.0.0/")
      })
      expect(answer.status).toBe(200)
      expect((yield* app.relaySources.getSource("saved")).webhooks?.endpoints).toHaveLength(4)
    }))

  it.live("HOOKRELAY_CONFIG provisioning refuses the whole file, naming the source and field", () =>
    Effect.gen(function*() {
      const dns = scriptedDns()
      const policy = egress(false, dns.layer)
      const app = yield* startApp({ egress: policy, dispatch: false })
      const directory = yield* tempDirectory
      const path = Path.join(directory, "config.json")
      writeFileSync(
        path,
        JSON.stringify({
          sources: [
            {
              id: "fine",
              writeKey: "wk_fine",
              webhooks: { enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] }
            },
            {
              id: "internal",
              writeKey: "wk_internal",
              webhooks: {
                enabled: true,
                endpoints: [{ url: "https://hooks.example.com/" }, { url: "http://169.254.169.254/" }]
              }
            }
          ]
        })
      )
      const error = yield* provision(path).pipe(
        Effect.provide(policy),
        Effect.provideService(RelaySources, app.relaySources),
        Effect.flip
      )
      expect(error).toStrictEqual(
        new InvalidConfigFile({
          path,
          problems: [
            `sources[1].webhooks.endpoints[1].url: points at a refused address: 169.254.169.254 is link-local${hint}`
          ]
        })
      )
      expect(yield* app.relaySources.listSources).toStrictEqual([])
    }))

  it.live("PUT /admin/sources refuses them with a 400 even with the escape hatch", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: egress(true, scriptedDns().layer), dispatch: false })
      // A source holds at most 5 endpoints: one PUT per 5 hosts of the table.
      for (let from = 0; from < alwaysRefused.length; from += 5) {
        const group = alwaysRefused.slice(from, from + 5)
        const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
          body: settings(...group.map(({ host }) => `http://${host}/hook`))
        })
        expect(answer.status).toBe(400)
        expect(answer.body.errors).toStrictEqual(group.map(({ reason }, index) => ({
          path: `webhooks.endpoints[${index}].url`,
          message: `points at a refused address: ${reason} (always refused)`
        })))
      }
      expect(yield* app.relaySources.listSources).toStrictEqual([])
    }))
})
