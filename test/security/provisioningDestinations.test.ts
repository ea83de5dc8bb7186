import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import * as Path from "node:path"
import { InvalidConfigFile, provision } from "../../src/config/Provisioning.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { RelaySources } from "../../src/relay/Relay.js"
import { captureLogs } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { egress, hint, scriptedDns } from "./ssrfSupport.js"

/**
 * `HOOKRELAY_CONFIG` entries with `destinations` (REFERENCE §1a, §7): stored as the admin body would store them, a
 * generated Standard Webhooks secret announced for each destination (never the secret itself), and every
 * destination's endpoints under the SSRF guard's save-time check (REFERENCE §8) before anything is stored.
 */

const writeConfig = (sources: ReadonlyArray<unknown>) =>
  Effect.map(tempDirectory, (directory) => {
    const path = Path.join(directory, "config.json")
    writeFileSync(path, JSON.stringify({ sources }))
    return path
  })

describe("HOOKRELAY_CONFIG with destinations", () => {
  it.live("stores the destinations and logs each generated secret's destination, not the secret", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: egress(false, scriptedDns().layer), dispatch: false })
      const path = yield* writeConfig([{
        id: "shop",
        writeKey: "wk_shop_destinations",
        destinations: [
          { id: "webhooks", enabled: true, signing: "standard", endpoints: [{ url: "https://93.184.216.34/wh" }] },
          { id: "crm", enabled: true, sharedSecret: "crm-secret", endpoints: [{ url: "https://93.184.216.34/crm" }] },
          {
            id: "warehouse",
            enabled: true,
            signing: "standard",
            subscribe: { types: ["track"] },
            endpoints: [{ url: "https://93.184.216.34/dw" }]
          }
        ]
      }])
      const logs = captureLogs()
      yield* provision(path).pipe(Effect.provideService(RelaySources, app.relaySources), Effect.provide(logs.layer))

      const source = yield* app.relaySources.getSource("shop")
      expect(source.destinations?.map((destination) => destination.id)).toStrictEqual(["webhooks", "crm", "warehouse"])
      const secrets = (source.destinations ?? []).flatMap((destination) =>
        (destination.signingSecrets ?? []).map((entry) => entry.secret)
      )
      expect(secrets).toHaveLength(2)

      const warnings = logs.lines.filter((line) => line.level === "WARN").map((line) => line.message)
      expect(warnings).toStrictEqual([
        `source shop: a Standard Webhooks signing secret was generated for destination webhooks; give signingSecrets ` +
        `in ${path}, or rotate it (POST /admin/sources/shop/secrets/rotate) to be shown one`,
        `source shop: a Standard Webhooks signing secret was generated for destination warehouse; give signingSecrets ` +
        `in ${path}, or rotate it (POST /admin/sources/shop/destinations/warehouse/secrets/rotate) to be shown one`
      ])
      for (const line of logs.lines) {
        for (const secret of secrets) expect(line.message).not.toContain(secret)
      }
    }))

  it.live("refuses the whole file when any destination's endpoint is refused, naming the field", () =>
    Effect.gen(function*() {
      const policy = egress(false, scriptedDns().layer)
      const app = yield* startApp({ egress: policy, dispatch: false })
      const path = yield* writeConfig([
        {
          id: "fine",
          writeKey: "wk_fine",
          destinations: [{ id: "crm", enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] }]
        },
        {
          id: "internal",
          writeKey: "wk_internal",
          webhooks: { enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] },
          destinations: [
            { id: "crm", enabled: true, endpoints: [{ url: "https://hooks.example.com/" }] },
            {
              id: "metadata",
              enabled: true,
              endpoints: [{ url: "https://93.184.216.34/" }, { url: "http://169.254.169.254/" }]
            },
            { id: "lan", enabled: false, endpoints: [{ url: "http://10.0.0.7/" }] }
          ]
        }
      ])
      const error = yield* provision(path).pipe(
        Effect.provide(policy),
        Effect.provideService(RelaySources, app.relaySources),
        Effect.flip
      )
      expect(error).toStrictEqual(
        new InvalidConfigFile({
          path,
          problems: [
            `sources[1].destinations[1].endpoints[1].url: points at a refused address: 169.254.169.254 is link-local${hint}`,
            `sources[1].destinations[2].endpoints[0].url: points at a refused address: 10.0.0.7 is private${hint}`
          ]
        })
      )
      // Checked before anything is stored: the fine source too was left out.
      expect(yield* app.relaySources.listSources).toStrictEqual([])
    }))
})

describe("EgressPolicy.checkSource", () => {
  it.live("checks the webhooks object's and every destination's endpoints, naming each field under the prefix", () =>
    Effect.gen(function*() {
      const policy = yield* Effect.provide(
        Effect.gen(function*() {
          return yield* EgressPolicy.EgressPolicy
        }),
        egress(false, scriptedDns().layer)
      )
      const error = yield* EgressPolicy.checkSource(policy, {
        webhooks: { enabled: true, endpoints: [{ url: "http://127.0.0.1/" }, { url: "https://93.184.216.34/" }] },
        destinations: [
          { id: "a", enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] },
          { id: "b", enabled: true, endpoints: [{ url: "https://93.184.216.34/" }, { url: "http://192.168.1.1/" }] }
        ]
      }, "sources[3].").pipe(Effect.flip)
      expect(error.errors.map((issue) => issue.path)).toStrictEqual([
        "sources[3].webhooks.endpoints[0].url",
        "sources[3].destinations[1].endpoints[1].url"
      ])
      yield* EgressPolicy.checkSource(policy, {
        destinations: [{ id: "a", enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] }]
      })
    }))
})
