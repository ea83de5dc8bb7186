import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Browser } from "playwright-core"
import { startServer } from "../delivery/support.js"
import { createKey, putSource } from "../ingest/adminKeysSupport.js"
import { startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { call, pollUntil, track } from "../support/http.js"
import { ensureConsoleBuilt } from "./build.js"

/**
 * The console's message log with an API key limited to one source and without `replay` (REFERENCE §7c, §12): it opens
 * on that source, lists nothing of another, and offers no replay.
 */

const hasChromium = chromiumAvailable("the console's message log key tests")

describe.skipIf(!hasChromium)("web console: the message log with a limited key", () => {
  it.live(
    "opens on the key's source, shows its messages only, no replay without the scope; another source is refused",
    () =>
      Effect.gen(function*() {
        yield* Effect.promise(ensureConsoleBuilt)
        const receiver = yield* startServer((_, response) => response.writeHead(400).end("refused"))
        const app = yield* startApp()
        const base = app.baseUrl
        for (const id of ["ios", "web"]) yield* putSource(app, id, `${receiver.url}/hook`)
        for (const id of ["ios", "web"]) {
          expect(yield* track(base, `wk_keys_${id}_0123456789`, { userId: "u1", event: "E", messageId: `m-${id}` }))
            .toBe(200)
        }
        yield* pollUntil(
          call(base, "GET", "/admin/dead-letters"),
          (answer) => answer.body?.deadLetters?.length === 2,
          "both messages are dead letters"
        )
        const reader = yield* createKey(app, {
          name: "web readers",
          scopes: ["sources:read", "messages:read"],
          sourceIds: ["web"]
        })

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => launchChromium()),
          (b: Browser) => Effect.promise(() => b.close())
        )
        yield* Effect.promise(async () => {
          const context = await browser.newContext()
          const page = await context.newPage()
          const pageErrors: Array<string> = []
          page.on("pageerror", (error) => pageErrors.push(error.message))
          await page.goto(`${base}/console/`)
          await page.getByLabel("Admin token or API key").fill(reader.key)
          await page.getByLabel("Admin token or API key").press("Enter")
          await page.getByRole("heading", { name: "Sources" }).waitFor()

          await page.getByRole("link", { name: "Message log" }).click()
          const row = page.locator("tr[data-message-id='m-web']")
          await row.waitFor()
          expect(page.url()).toBe(`${base}/console/messages?sourceId=web`)
          expect(await page.locator("table.message-log tbody tr").count()).toBe(1)
          expect(await row.locator(".badge-dead").count()).toBe(1)
          // Only its source to choose, no "All sources", and no replay anywhere.
          expect(await page.locator("#log-source option").allTextContents()).toStrictEqual(["web"])
          expect(await page.getByRole("button", { name: /Replay/ }).count()).toBe(0)
          await row.getByRole("link", { name: "m-web" }).click()
          const detail = page.getByRole("article", { name: "Message m-web" })
          await detail.getByText("dead", { exact: true }).waitFor()
          expect(await detail.locator("ol.attempts > li").count()).toBe(1)
          expect(await page.getByRole("button", { name: /Replay/ }).count()).toBe(0)

          // Another source's log is refused as the API refuses it.
          await page.goto(`${base}/console/messages?sourceId=ios`)
          // The log and the dead letters below it both say so.
          await expect.poll(() => page.getByRole("alert").filter({ hasText: "no such source" }).count()).toBe(2)
          expect(await page.locator("table.message-log").count()).toBe(0)
          expect(pageErrors).toStrictEqual([])
          await context.close()
        })
      }),
    120_000
  )
})
