import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser } from "playwright-core"
import { startServer } from "../delivery/support.js"
import { adminToken, startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { call, track } from "../support/http.js"
import { ensureConsoleBuilt } from "./build.js"

/**
 * A source's destinations in the console (REFERENCE §1a, §7b, §12): created from its page (a field-named refusal
 * first), listed with their settings and endpoints' health, fed by real messages, one rotated, one deleted.
 */

const hasChromium = chromiumAvailable("the console's destination pages")
const writeKey = "wk-console-destinations-0123456789"

describe.skipIf(!hasChromium)("web console: a source's destinations in Chromium", () => {
  it.live(
    "creates two destinations, lists them with their endpoints and health, rotates one, deletes one",
    () =>
      Effect.gen(function*() {
        yield* Effect.promise(ensureConsoleBuilt)
        const warehouse = yield* startServer((_, response) => void response.writeHead(200).end())
        // The CRM refuses one message for good (400): it becomes the CRM's dead letter; the warehouse's copy is delivered.
        const crm = yield* startServer((request, response) =>
          void response.writeHead(request.body.toString("utf8").includes("refused-by-crm") ? 400 : 200).end()
        )
        const app = yield* startApp()
        const base = app.baseUrl
        const created = yield* call(base, "PUT", "/admin/sources/web", { body: { writeKey } })
        expect(created.status).toBe(200)
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
          await page.getByRole("heading", { name: "Destinations" }).waitFor()
          await page.getByText("This source has no destination.").waitFor()

          // --- the first: Standard Webhooks signing, a retry window the server refuses, then one it takes ------
          await page.getByRole("link", { name: "Add destination" }).click()
          await page.getByRole("heading", { name: "New destination of web" }).waitFor()
          await page.getByLabel("Destination id").fill("warehouse")
          await page.getByLabel("Name", { exact: true }).fill("Warehouse loader")
          await page.getByLabel("No signature").check()
          await page.getByLabel("Signature scheme").selectOption("standard")
          await page.getByLabel("Retry window").fill("4 days")
          await page.getByLabel("Endpoint 1 URL").fill(`${warehouse.url}/in`)
          await page.getByRole("button", { name: "Create destination" }).click()
          const windowErrors = page.locator("#f-retryWindow-errors")
          await expect.poll(() => windowErrors.textContent()).toContain("1 minute to 72 hours")
          expect(await page.getByLabel("Retry window").getAttribute("aria-invalid")).toBe("true")
          // Nothing was stored by the refused save.
          const refused = await Effect.runPromise(call(base, "GET", "/admin/sources/web/destinations"))
          expect(refused.body.destinations).toEqual([])
          await page.getByLabel("Retry window").fill("30 minutes")
          await page.getByRole("button", { name: "Create destination" }).click()
          await page.getByText("Destination warehouse saved.").waitFor()
          // The secret the save generated, shown once on the source's page.
          const generated = await page.getByTestId("new-signing-secret").textContent()
          expect(generated).toMatch(/^whsec_/)

          // --- the second: tracks of one event only -------------------------------------------------------------
          await page.getByRole("link", { name: "Add destination" }).click()
          await page.getByLabel("Destination id").fill("crm")
          await page.getByLabel("No signature").check()
          await page.getByRole("checkbox", { name: "track", exact: true }).check()
          await page.getByLabel(/^Track events/).fill("Order Completed")
          await page.getByLabel("Request timeout").fill("10 seconds")
          await page.getByLabel("Endpoint 1 URL").fill(`${crm.url}/hooks`)
          await page.getByRole("button", { name: "Create destination" }).click()
          await page.getByText("Destination crm saved.").waitFor()

          const warehouseCard = page.locator("article[data-destination='warehouse']")
          const crmCard = page.locator("article[data-destination='crm']")
          await expect.poll(() => warehouseCard.textContent()).toContain("Warehouse loader")
          const warehouseText = await warehouseCard.textContent()
          expect(warehouseText).toContain("30 minutes")
          expect(warehouseText).toContain("every message")
          expect(warehouseText).toContain("5 seconds (default)")
          expect(await warehouseCard.locator(`tr[data-url="${warehouse.url}/in"]`).count()).toBe(1)
          const crmText = await crmCard.textContent()
          expect(crmText).toContain("track; track events Order Completed")
          expect(crmText).toContain("10 seconds")
          expect(crmText).toContain("4 hours (default)")
          expect(await crmCard.locator(`tr[data-url="${crm.url}/hooks"]`).count()).toBe(1)
          const stored = await Effect.runPromise(call(base, "GET", "/admin/sources/web/destinations"))
          expect(stored.body.destinations.map((d: { id: string }) => d.id)).toEqual(["warehouse", "crm"])
          expect(stored.body.destinations[1].subscribe).toEqual({ types: ["track"], events: ["Order Completed"] })

          // --- messages fan out by subscription; each endpoint's health shows on its destination -------------------
          await Effect.runPromise(track(base, writeKey, { type: "track", event: "Order Completed", userId: "u" }))
          await Effect.runPromise(track(base, writeKey, { type: "track", event: "Page Scrolled", userId: "u" }))
          await Effect.runPromise(
            track(base, writeKey, { type: "track", event: "Order Completed", userId: "u", messageId: "refused-by-crm" })
          )
          await expect.poll(() => warehouse.requests.length, { timeout: 15_000 }).toBe(3)
          await expect.poll(() => crm.requests.length, { timeout: 15_000 }).toBe(2)
          await expect.poll(async () =>
            (await Effect.runPromise(call(base, "GET", "/admin/dead-letters?sourceId=web"))).body.deadLetters.length
          ).toBe(1)
          // The page shows what the API answered when it was loaded: once every attempt is recorded, load it again.
          await expect.poll(async () =>
            (await Effect.runPromise(call(base, "GET", "/admin/endpoints?sourceId=web"))).body.endpoints.map((
              e: { lastDay: { attempts: number } }
            ) => e.lastDay.attempts), { timeout: 15_000 }).toEqual([3, 2])
          await page.reload()
          await page.getByRole("heading", { name: "Destinations" }).waitFor()
          await expect.poll(() =>
            warehouseCard.locator("tr[data-url]").textContent()
          ).toContain("100.0 % of 3")
          expect(await warehouseCard.locator("tr[data-url]").textContent()).toContain("healthy")
          await expect.poll(() => crmCard.locator("tr[data-url]").textContent()).toContain("50.0 % of 2")
          // Usage per destination, and the dead letter names its destination.
          await expect.poll(() => warehouseCard.textContent()).toContain("3 delivered, 0 dead")
          await expect.poll(() => crmCard.textContent()).toContain("1 delivered, 1 dead")
          const deadLetters = page.getByRole("table", { name: "Dead letters of web" })
          await expect.poll(() => deadLetters.locator("tbody tr").count()).toBe(1)
          expect(await deadLetters.locator("tbody tr").getAttribute("data-destination")).toBe("crm")
          expect(await deadLetters.locator("tbody tr").textContent()).toContain("refused-by-crm")
          expect(await page.content()).not.toContain(generated!)

          // --- a rotation on one destination: its new secret shows once, the other keeps none ------------------------
          await warehouseCard.getByLabel("Keep the old secrets of warehouse signing for").fill("1 hour")
          await warehouseCard.getByRole("button", { name: "Rotate secret of warehouse" }).click()
          const rotated = await warehouseCard.getByTestId("new-signing-secret").textContent()
          expect(rotated).toMatch(/^whsec_/)
          const afterRotation = await Effect.runPromise(call(base, "GET", "/admin/sources/web/destinations"))
          expect(afterRotation.body.destinations[0].signingSecrets).toHaveLength(2)
          expect(afterRotation.body.destinations[0].signingSecrets[0].prefix).toBe(rotated!.slice(0, 10))
          expect(afterRotation.body.destinations[1].signingSecrets ?? []).toEqual([])

          // --- deleting asks first: a dismissed question keeps it, an accepted one removes it ------------------------
          page.once("dialog", (dialog) => void dialog.dismiss())
          await crmCard.getByRole("button", { name: "Delete destination crm" }).click()
          expect(await crmCard.count()).toBe(1)
          page.once("dialog", (dialog) => {
            expect(dialog.message()).toContain("Delete the destination crm of web?")
            void dialog.accept()
          })
          await crmCard.getByRole("button", { name: "Delete destination crm" }).click()
          await page.getByText("Destination crm deleted.").waitFor()
          await expect.poll(() => crmCard.count()).toBe(0)
          expect(await warehouseCard.count()).toBe(1)
          const left = await Effect.runPromise(call(base, "GET", "/admin/sources/web/destinations"))
          expect(left.body.destinations.map((d: { id: string }) => d.id)).toEqual(["warehouse"])
          const endpoints = await Effect.runPromise(call(base, "GET", "/admin/endpoints?sourceId=web"))
          expect(endpoints.body.endpoints.map((e: { destinationId: string }) => e.destinationId)).toEqual(["warehouse"])
          // Its dead letter is kept, still naming it.
          expect(await deadLetters.locator("tbody tr").getAttribute("data-destination")).toBe("crm")
          expect(pageErrors).toEqual([])
        })
      }),
    120_000
  )
})
