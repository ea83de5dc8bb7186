import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser } from "playwright-core"
import { adminToken } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { startWithGoneEndpoint } from "../support/goneEndpoint.js"
import { pollUntil, track } from "../support/http.js"
import { ensureConsoleBuilt } from "./build.js"

const hasChromium = chromiumAvailable("the console's endpoint page")
const writeKey = "wk-console-endpoints-0123456789"

describe.skipIf(!hasChromium)("web console: endpoints page in Chromium", () => {
  it.live("shows a disabled URL, enables it, counts and replays its dead letters", () =>
    Effect.gen(function*() {
      yield* Effect.promise(ensureConsoleBuilt)
      const { app, receiver, setStatus, url } = yield* startWithGoneEndpoint(writeKey)
      yield* track(app.baseUrl, writeKey, { type: "track", event: "A", userId: "u" })
      yield* pollUntil(
        app.relayEndpoints.endpointHealth("web"),
        (endpoints) => endpoints[0]?.state === "disabled" && endpoints[0].lastDay.attempts === 1,
        "the URL disabled"
      )
      yield* track(app.baseUrl, writeKey, { type: "track", event: "B", userId: "u" })
      yield* pollUntil(app.relayMessages.deadLetters({ sourceId: "web", limit: 10 }), (jobs) =>
        jobs.length === 2, "2 dead")

      const browser = yield* Effect.acquireRelease(
        Effect.promise(() =>
          launchChromium()
        ),
        (b: Browser) => Effect.promise(() => b.close())
      )
      yield* Effect.promise(async () => {
        const page = await (await browser.newContext()).newPage()
        const pageErrors: Array<string> = []
        page.on("pageerror", (error) => pageErrors.push(error.message))
        await page.goto(`${app.baseUrl}/console/`)
        await page.getByLabel("Admin token").fill(adminToken)
        await page.getByLabel("Admin token").press("Enter")
        await page.getByRole("heading", { name: "Sources" }).waitFor()
        await page.getByRole("link", { name: "Endpoints" }).click()
        await page.getByRole("heading", { name: "Endpoints" }).waitFor()
        const row = page.locator(`tr[data-url="${url}"]`)
        await expect.poll(() => row.textContent()).toContain("HTTP 410 Gone")
        expect(await row.textContent()).toContain("disabled")

        setStatus(200)
        await row.getByRole("button", { name: "Enable" }).click()
        await expect.poll(() => row.textContent()).toContain("healthy")
        expect(await row.getByRole("button", { name: "Enable" }).count()).toBe(0)

        const form = page.getByRole("form", { name: "Bulk recovery" })
        await form.getByLabel("URL").selectOption(url)
        await form.getByRole("button", { name: "Count" }).click()
        await expect.poll(() => form.getByRole("status").textContent()).toBe("2 dead letters match.")
        await form.getByRole("button", { name: "Replay" }).click()
        await expect.poll(() => form.getByRole("status").textContent()).toBe("2 dead letters replayed.")
        await expect.poll(() => receiver.requests.length).toBe(3)
        expect(pageErrors).toStrictEqual([])
      })
    }), 120_000)
})
