import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startApp } from "../support/app.js"
import { call } from "../support/http.js"

/** Standard Webhooks signing through the admin API: secrets shown once, never after; refusals name the field. */

const secretOf = (byte: number) => "whsec_" + Buffer.alloc(32, byte).toString("base64")

const source = (webhooks: Record<string, unknown>) => ({
  writeKey: "wk_admin_secrets_0123456789",
  webhooks: { enabled: true, endpoints: [{ url: "https://hooks.example.com/in" }], ...webhooks }
})

const pathsOf = (body: { readonly errors: ReadonlyArray<{ readonly path: string }> }) =>
  body.errors.map((issue) => issue.path)

describe("admin API: Standard Webhooks secrets", () => {
  it.live("a generated secret is shown in full once, in the answer of the save that made it", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const created = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source({ signing: "standard" }) })
      expect(created.status).toBe(200)
      const secret: string = created.body.generatedSecret
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
      expect(created.body.webhooks.signing).toBe("standard")
      expect(created.body.webhooks.signingSecrets).toStrictEqual([
        {
          id: expect.stringMatching(/^sec_[0-9a-f]{16}$/),
          prefix: secret.slice(0, 10),
          createdAt: expect.any(String),
          expiresAt: null
        }
      ])

      const shown = yield* call(app.baseUrl, "GET", "/admin/sources/web")
      expect(shown.body.generatedSecret).toBeUndefined()
      expect(shown.text).not.toContain(secret)
      expect(shown.body.webhooks.signingSecrets).toStrictEqual(created.body.webhooks.signingSecrets)

      // Saving other fields keeps the secret (nothing new to show).
      const again = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source({ signing: "both" }) })
      expect(again.body.generatedSecret).toBeUndefined()
      expect(again.body.webhooks.signingSecrets).toStrictEqual(created.body.webhooks.signingSecrets)
      const listed = yield* call(app.baseUrl, "GET", "/admin/sources")
      expect(listed.text).not.toContain(secret)
    }))

  it.live("a rotation answers the new secret once; the old one gets its expiry", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const old = secretOf(3)
      yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
        body: source({ signing: "standard", signingSecrets: [{ secret: old }] })
      })
      const rotated = yield* call(app.baseUrl, "POST", "/admin/sources/web/secrets/rotate", {
        body: { keepOldFor: "2 hours" }
      })
      expect(rotated.status).toBe(200)
      expect(rotated.body.secret).toMatch(/^whsec_/)
      expect(rotated.body.signingSecrets).toHaveLength(2)
      const [fresh, previous] = rotated.body.signingSecrets
      expect(fresh.id).toBe(rotated.body.id)
      expect(fresh.expiresAt).toBeNull()
      expect(previous.prefix).toBe(old.slice(0, 10))
      expect(Date.parse(previous.expiresAt) - Date.parse(fresh.createdAt)).toBe(2 * 3_600_000)
      expect(rotated.text).not.toContain(old)

      // No body: the default, 24 hours.
      const byDefault = yield* call(app.baseUrl, "POST", "/admin/sources/web/secrets/rotate")
      expect(byDefault.status).toBe(200)
      const shown = yield* call(app.baseUrl, "GET", "/admin/sources/web")
      expect(shown.body.webhooks.signingSecrets).toHaveLength(3)
      for (const secret of [old, rotated.body.secret, byDefault.body.secret]) expect(shown.text).not.toContain(secret)
    }))

  it.live("asymmetric: the admin API shows the whpk_ public key, never the private key", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const saved = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
        body: source({ signing: "standard", asymmetric: true })
      })
      expect(saved.status).toBe(200)
      expect(saved.body.webhooks.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/)
      expect(saved.body.webhooks.asymmetric).toBe(true)
      expect(saved.text).not.toContain("whsk_")
      const stored = yield* app.relaySources.getSource("web")
      const privateKey = stored.webhooks!.signingKey!
      expect(saved.text).not.toContain(privateKey.slice("whsk_".length))
    }))

  it.live("bad signing settings are 400s naming the field, and store nothing", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const refused = (webhooks: Record<string, unknown>) =>
        Effect.map(
          call(app.baseUrl, "PUT", "/admin/sources/web", { body: source(webhooks) }),
          (answer) => {
            expect(answer.status).toBe(400)
            expect(answer.body.code).toBe("invalid_settings")
            return pathsOf(answer.body)
          }
        )
      expect(yield* refused({ signing: "pgp" })).toStrictEqual(["webhooks.signing"])
      expect(yield* refused({ signing: "standard", signingSecrets: [{ secret: "not-a-secret" }] }))
        .toStrictEqual(["webhooks.signingSecrets[0].secret"])
      expect(yield* refused({ signing: "standard", signingSecrets: [{ secret: "whsec_c2hvcnQ=" }] }))
        .toStrictEqual(["webhooks.signingSecrets[0].secret"])
      expect(yield* refused({ signingSecrets: [{ secret: secretOf(1), expiresAt: "tomorrow" }] }))
        .toStrictEqual(["webhooks.signingSecrets[0].expiresAt"])
      expect(yield* refused({ signingSecrets: Array.from({ length: 11 }, (_, i) => ({ secret: secretOf(i) })) }))
        .toStrictEqual(["webhooks.signingSecrets"])
      expect(yield* refused({ asymmetric: true })).toStrictEqual(["webhooks.asymmetric"])
      expect(yield* refused({ signing: "standard", asymmetric: true, signingKey: "whsk_AAAA" }))
        .toStrictEqual(["webhooks.signingKey"])
      expect(
        yield* refused({ endpoints: [{ url: "https://hooks.example.com/in", headers: { "Webhook-Signature": "x" } }] })
      ).toStrictEqual(["webhooks.endpoints[0].headers.Webhook-Signature"])
      expect(yield* app.sources.listSources()).toStrictEqual([])
    }))

  it.live("a rotation refuses a bad keepOldFor (naming it), an unknown source, and an 11th secret", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const rotate = (body?: unknown, id = "web") =>
        call(app.baseUrl, "POST", `/admin/sources/${id}/secrets/rotate`, body === undefined ? {} : { body })
      expect((yield* rotate({}, "nobody")).status).toBe(404)
      yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source({ signing: "standard" }) })
      for (const keepOldFor of ["soon", -5, "-1 hours", true]) {
        const answer = yield* rotate({ keepOldFor })
        expect(answer.status).toBe(400)
        expect(pathsOf(answer.body)).toStrictEqual(["keepOldFor"])
      }
      const notJson = yield* rotate("{")
      expect(notJson.status).toBe(400)
      for (let i = 0; i < 9; i++) expect((yield* rotate({ keepOldFor: "1 hour" })).status).toBe(200)
      const full = yield* rotate({ keepOldFor: "1 hour" })
      expect(full.status).toBe(400)
      expect(pathsOf(full.body)).toStrictEqual(["signingSecrets"])
      expect(full.text).not.toContain("whsec_")
    }))
})
