import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser } from "playwright-core"
import { adminToken, startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { call } from "../support/http.js"
import { ensureConsoleBuilt } from "./build.js"

/** The console's Standard Webhooks signing: the scheme, asymmetric keys, and a rotation whose secret shows once. */

const hasChromium = chromiumAvailable("the console's signing tests")

describe.skipIf(!hasChromium)("web console: Standard Webhooks signing", () => {
  it.live("switches a source to both schemes with ed25519, shows its public key, rotates its secret once", () =>
    Effect.gen(function*() {
      yield* Effect.promise(ensureConsoleBuilt)
      const app = yield* startApp({ dispatch: false })
      const base = app.baseUrl
      const created = yield* call(base, "PUT", "/admin/sources/web", {
        body: {
          writeKey: "wk-console-signing-0123456789",
          webhooks: { enabled: true, signing: "standard", endpoints: [{ url: "https://hooks.example.com/in" }] }
        }
      })
      const first: string = created.body.generatedSecret
      const browser = yield* Effect.acquireRelease(
        Effect.promise(() => launchChromium()),
        (b: Browser) => Effect.promise(() => b.close())
      )
      yield* Effect.promise(async () => {
        const page = await (await browser.newContext()).newPage()
        const pageErrors: Array<string> = []
        page.on("pageerror", (error) => pageErrors.push(error.message))
        await page.goto(`${base}/console/`)
        await page.getByLabel("Admin token").fill(adminToken)
        await page.getByLabel("Admin token").press("Enter")
        await page.getByRole("heading", { name: "Sources" }).waitFor()
        await page.goto(`${base}/console/sources/web`)
        await page.getByRole("heading", { name: "Standard Webhooks signing" }).waitFor()
        expect(await page.getByLabel("Signature scheme").inputValue()).toBe("standard")
        expect(await page.content()).not.toContain(first)

        // The console asks for the write key again on every save (the API never shows it in full).
        await page.getByLabel("Write key").fill("wk-console-signing-0123456789")
        await page.getByLabel("Signature scheme").selectOption("both")
        await page.getByLabel(/Asymmetric signatures too/).check()
        await page.getByRole("button", { name: "Save source" }).click()
        await page.getByTestId("public-key").waitFor()
        expect(await page.getByTestId("public-key").textContent()).toMatch(/^whpk_/)
        const saved = await Effect.runPromise(call(base, "GET", "/admin/sources/web"))
        expect(saved.body.webhooks).toMatchObject({ signing: "both", asymmetric: true })
        // The save kept the secret it did not send back.
        expect(saved.body.webhooks.signingSecrets).toHaveLength(1)

        await page.getByLabel("Keep the old secrets signing for").fill("2 hours")
        await page.getByRole("button", { name: "Rotate secret" }).click()
        const shown = await page.getByTestId("new-signing-secret").textContent()
        expect(shown).toMatch(/^whsec_/)
        const after = await Effect.runPromise(call(base, "GET", "/admin/sources/web"))
        expect(after.body.webhooks.signingSecrets).toHaveLength(2)
        expect(after.body.webhooks.signingSecrets[0].prefix).toBe(shown!.slice(0, 10))
        expect(after.body.webhooks.signingSecrets[1].expiresAt).not.toBeNull()
        // Shown once: a fresh visit of the page no longer has it.
        await page.reload()
        await page.getByRole("heading", { name: "Standard Webhooks signing" }).waitFor()
        expect(await page.content()).not.toContain(shown!)
        expect(pageErrors).toEqual([])
      })
    }))
})
