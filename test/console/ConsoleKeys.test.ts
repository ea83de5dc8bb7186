import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser, Page } from "playwright-core"
import { createKey, putSource } from "../ingest/adminKeysSupport.js"
import { adminToken, startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { call } from "../support/http.js"
import { ensureConsoleBuilt } from "./build.js"

/** The console with an API key (REFERENCE §7c, §12): it logs in with an `hrk_` key and hides what its scopes refuse. */

const hasChromium = chromiumAvailable("the console's API key tests")

const logIn = async (page: Page, base: string, token: string) => {
  await page.goto(`${base}/console/`)
  await page.getByLabel("Admin token or API key").fill(token)
  await page.getByLabel("Admin token or API key").press("Enter")
  await page.getByRole("heading", { name: "Sources" }).waitFor()
}

describe.skipIf(!hasChromium)("web console with API keys", () => {
  it.live(
    "a read-only key sees sources without write or replay actions; the admin token sees them all",
    () =>
      Effect.gen(function*() {
        yield* Effect.promise(ensureConsoleBuilt)
        const app = yield* startApp({ dispatch: false })
        const base = app.baseUrl
        yield* putSource(app, "web")
        const reader = yield* createKey(app, { name: "dashboards", scopes: ["sources:read"] })
        const operator = yield* createKey(app, { name: "on call", scopes: ["sources:read", "messages:read", "replay"] })
        expect((yield* call(base, "GET", "/admin/keys/self", { authorization: reader.authorization })).status).toBe(200)

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => launchChromium()),
          (b: Browser) => Effect.promise(() => b.close())
        )
        yield* Effect.promise(async () => {
          const context = await browser.newContext()
          const page = await context.newPage()
          const pageErrors: Array<string> = []
          page.on("pageerror", (error) => pageErrors.push(error.message))

          await logIn(page, base, reader.key)
          await page.getByRole("link", { name: "web" }).first().waitFor()
          expect(await page.getByText("dashboards").count()).toBe(1)
          expect(await page.getByRole("link", { name: "Add source" }).count()).toBe(0)
          expect(await page.getByRole("link", { name: "Message log" }).count()).toBe(0)
          await page.goto(`${base}/console/sources/web`)
          await page.getByLabel("Write key").waitFor()
          expect(await page.getByRole("button", { name: /Save source|Delete source|Rotate secret/ }).count()).toBe(0)
          await page.getByRole("button", { name: "Log out" }).click()

          await logIn(page, base, operator.key)
          expect(await page.getByRole("link", { name: "Message log" }).count()).toBe(1)
          expect(await page.getByRole("link", { name: "Add source" }).count()).toBe(0)
          await page.getByRole("button", { name: "Log out" }).click()

          await logIn(page, base, adminToken)
          expect(await page.getByRole("link", { name: "Add source" }).count()).toBe(1)
          await page.goto(`${base}/console/sources/web`)
          await page.getByRole("button", { name: "Save source" }).waitFor()
          expect(await page.getByRole("button", { name: "Delete source" }).count()).toBe(1)
          expect(pageErrors).toStrictEqual([])
        })
      }),
    120_000
  )
})
