import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import * as Path from "node:path"
import type { Browser, Page } from "playwright-core"
import { startServer } from "../delivery/support.js"
import { adminToken, startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { basic, call } from "../support/http.js"
import { repoRoot } from "../support/serverProcess.js"
import { ensureConsoleBuilt } from "./build.js"

/**
 * The web console (REFERENCE §12) end to end: headless Chromium (Debian's package) against the real
 * server on 127.0.0.1, two loopback receivers, messages sent through the tracking API.
 */

const hasChromium = chromiumAvailable("the console's browser tests")

const screenshots = Path.join(repoRoot, "test-output", "console")

const shot = (page: Page, name: string) =>
  page.screenshot({ path: Path.join(screenshots, `${name}.png`), fullPage: true })

/** The admin token as the console keeps it (page code: the test's tsconfig has no DOM types). */
const storedToken = (page: Page) => page.evaluate("sessionStorage.getItem('hookrelay.adminToken')")

const writeKey = "wk-console-e2e-0123456789"
const sharedSecret = "shared-secret-console-e2e-0123456789"

/** Sends one track through the tracking API, as a client library would. */
const track = async (baseUrl: string, body: Record<string, unknown>) => {
  const response = await fetch(`${baseUrl}/v1/track`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(writeKey) },
    body: JSON.stringify(body)
  })
  await response.arrayBuffer()
  return response.status
}

const waitFor = async <A>(what: string, read: () => Promise<A>, done: (value: A) => boolean) => {
  let value = await read()
  for (let waited = 0; waited < 15_000 && !done(value); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    value = await read()
  }
  if (!done(value)) throw new Error(`timed out waiting until ${what}; last: ${JSON.stringify(value)}`)
  return value
}

describe.skipIf(!hasChromium)("web console in Chromium", () => {
  it.live(
    "logs in, creates a source with two endpoints and a filter, finds messages, replays a dead letter, shows usage",
    () =>
      Effect.gen(function*() {
        yield* Effect.promise(ensureConsoleBuilt)
        mkdirSync(screenshots, { recursive: true })

        // Both receivers refuse "Payment Failed" (400, permanent) until fixed, so that job goes dead.
        let fixed = false
        const answer =
          (name: string) => (request: { readonly body: Buffer }, response: import("node:http").ServerResponse) => {
            const event = (JSON.parse(request.body.toString("utf8")) as { event?: string }).event
            if (event === "Payment Failed" && !fixed) {
              response.writeHead(400, { "content-type": "text/plain" }).end(
                `rejected by receiver ${name}: unknown tenant`
              )
            } else {
              response.writeHead(200, { "content-type": "application/json" }).end(`{"ok":true,"receiver":"${name}"}`)
            }
          }
        const receiverA = yield* startServer(answer("A"))
        const receiverB = yield* startServer(answer("B"))
        const app = yield* startApp()
        const base = app.baseUrl

        const browser = yield* Effect.acquireRelease(Effect.promise(() => launchChromium()), (b: Browser) =>
          Effect.promise(() => b.close()))
        yield* Effect.promise(async () => {
          const context = await browser.newContext({ viewport: { width: 1366, height: 860 } })
          const page = await context.newPage()
          const requested: Array<string> = []
          page.on("request", (request) =>
            requested.push(request.url()))
          const pageErrors: Array<string> = []
          page.on("pageerror", (error) => pageErrors.push(error.message))

          // --- login: a wrong token is refused, the right one is kept in sessionStorage ----------
          await page.goto(`${base}/console/`)
          await page.getByLabel("Admin token").fill("not-the-token")
          await page.getByLabel("Admin token").press("Enter")
          await expect.poll(() => page.locator("#login-error").textContent()).toBe("Wrong token.")
          await shot(page, "01-login-wrong-token")
          await page.getByLabel("Admin token").fill(adminToken)
          await page.getByLabel("Admin token").press("Enter")
          await page.getByRole("heading", { name: "Sources" }).waitFor()
          expect(page.url()).toBe(`${base}/console/sources`)
          expect(await storedToken(page)).toBe(adminToken)
          await page.getByText("No sources yet").waitFor()

          // --- a source with two endpoints, a static header, a secret and a filter ---------------
          await page.getByRole("link", { name: "Add source" }).click()
          await page.getByLabel("Source id").fill("web")
          await page.getByLabel("Write key").fill(writeKey)
          await page.getByLabel("Shared secret", { exact: true }).fill(sharedSecret)
          await page.getByLabel("Endpoint 1 URL").fill(`${receiverA.url}/hooks`)
          await page.getByRole("button", { name: "Add header to endpoint 1" }).click()
          await page.getByLabel("Endpoint 1 header 1 name").fill("X-Tenant")
          await page.getByLabel("Endpoint 1 header 1 value").fill("acme")
          await page.getByRole("button", { name: "Add endpoint" }).click()
          await page.getByLabel("Endpoint 2 URL").fill(`${receiverB.url}/hooks`)
          await page.getByRole("button", { name: "Add filter rule" }).click()
          // A misspelt type: the server's 400 names webhooks.filters[0].if.type[0], shown at that input.
          const types = page.getByLabel("Type is one of")
          await types.fill("trak")
          await page.getByRole("button", { name: "Add event to rule 1" }).click()
          await page.getByLabel("Rule 1 event 1").fill("Internal Ping")
          await page.getByLabel("Rule 1 event 1").press("Enter")
          const typeErrors = page.locator("#f-webhooks_filters_0__if_type-errors")
          await typeErrors.waitFor()
          expect(await typeErrors.textContent()).toMatch(/must be one of/)
          expect(await types.getAttribute("aria-invalid")).toBe("true")
          expect(await types.getAttribute("aria-describedby")).toBe("f-webhooks_filters_0__if_type-errors")
          // Next to the field: in the same field block as the input, and the input has the focus.
          expect(await types.locator("xpath=..").locator(".field-errors").count()).toBe(1)
          expect(await page.evaluate("document.activeElement?.id")).toBe("f-webhooks_filters_0__if_type")
          expect((await Effect.runPromise(call(base, "GET", "/admin/sources"))).body.sources).toEqual([])
          await shot(page, "02-source-filter-error")

          await types.fill("track")
          await types.press("Enter")
          await page.getByText("Source created.").waitFor()
          expect(page.url()).toBe(`${base}/console/sources/web`)
          // What was entered stays in the form, to be copied: the API shows it masked only.
          expect(await page.getByLabel("Write key").inputValue()).toBe(writeKey)
          expect(await page.getByLabel("Shared secret", { exact: true }).inputValue()).toBe(sharedSecret)
          await shot(page, "03-source-saved")
          const stored = await Effect.runPromise(call(base, "GET", "/admin/sources/web"))
          expect(stored.body.webhooks).toMatchObject({
            enabled: true,
            hasSharedSecret: true,
            endpoints: [{ url: `${receiverA.url}/hooks`, headers: { "X-Tenant": "acme" } }, {
              url: `${receiverB.url}/hooks`
            }],
            filters: [{ if: { type: ["track"], event: ["Internal Ping"] }, then: "drop" }]
          })

          await page.getByRole("link", { name: "Sources" }).click()
          await page.getByRole("row", { name: /web/ }).waitFor()
          await shot(page, "04-sources")

          // --- messages through the tracking API -------------------------------------------------
          for (const n of [1, 2, 3]) {
            expect(await track(base, { messageId: `msg-ok-${n}`, userId: "user-e2e", event: "Order Completed" })).toBe(
              200
            )
          }
          expect(await track(base, { messageId: "msg-filtered-1", userId: "user-e2e", event: "Internal Ping" })).toBe(
            200
          )
          expect(await track(base, { messageId: "msg-fail-1", userId: "user-e2e", event: "Payment Failed" })).toBe(200)
          await waitFor(
            "the jobs settle",
            async () => (await Effect.runPromise(call(base, "GET", "/admin/backlog"))).body,
            (b) => b.pending === 0 && b.delivering === 0 && b.dead === 1 && b.delivered === 3
          )
          const signed = receiverA.requests.find((request) => request.body.includes("msg-ok-1"))
          expect(signed?.headers["x-tenant"]).toBe("acme")
          expect(signed?.headers["x-signature"]).toBeDefined()
          expect([...receiverA.requests, ...receiverB.requests].some((r) => r.body.includes("msg-filtered-1"))).toBe(
            false
          )

          // --- message log: the source's newest messages, filters, pages, a message's attempts as a timeline ------
          await page.getByRole("link", { name: "Message log" }).click()
          const logIds = () => page.locator("table.message-log tbody tr td:nth-child(2)").allTextContents()
          const newest = ["msg-fail-1", "msg-filtered-1", "msg-ok-3", "msg-ok-2", "msg-ok-1"]
          await expect.poll(logIds).toEqual(newest)
          expect(page.url()).toBe(`${base}/console/messages?sourceId=web`)
          const failedRow = page.locator("tr[data-message-id='msg-fail-1']")
          expect(await failedRow.locator(".badge-dead").count()).toBe(1)
          expect(await failedRow.getByRole("button", { name: "Replay message msg-fail-1" }).count()).toBe(1)
          expect(await page.locator("tr[data-message-id='msg-filtered-1'] .badge-filtered").count()).toBe(1)
          expect(await page.locator("tr[data-message-id='msg-ok-1']").textContent()).toMatch(
            /delivered\s*webhooks\s*\d attempts?, last (200|no answer) at/
          )
          await shot(page, "05-message-log")
          // Filter by status: one, then two (any of them).
          await page.getByRole("checkbox", { name: "dead" }).check()
          await page.getByRole("button", { name: "Apply filters" }).click()
          await expect.poll(logIds).toEqual(["msg-fail-1"])
          expect(page.url()).toBe(`${base}/console/messages?sourceId=web&status=dead`)
          await page.getByRole("checkbox", { name: "filtered" }).check()
          await page.getByRole("button", { name: "Apply filters" }).click()
          await expect.poll(logIds).toEqual(["msg-fail-1", "msg-filtered-1"])
          await page.getByRole("checkbox", { name: "dead" }).uncheck()
          await page.getByRole("checkbox", { name: "filtered" }).uncheck()
          await page.getByLabel("User id").fill("user-e2e")
          await page.getByLabel("Type").selectOption("track")
          await page.getByLabel("Event").fill("Order Completed")
          await page.getByLabel("Event").press("Enter")
          await expect.poll(logIds).toEqual(["msg-ok-3", "msg-ok-2", "msg-ok-1"])
          expect(page.url()).toContain("userId=user-e2e")
          // Pages through the cursor, and back to the newest.
          await page.goto(`${base}/console/messages?sourceId=web&limit=2`)
          await expect.poll(logIds).toEqual(newest.slice(0, 2))
          expect(await page.getByRole("button", { name: "Back to newest" }).count()).toBe(0)
          await page.getByRole("button", { name: "Next page" }).click()
          await expect.poll(logIds).toEqual(newest.slice(2, 4))
          await page.getByRole("button", { name: "Next page" }).click()
          await expect.poll(logIds).toEqual(newest.slice(4))
          expect(await page.getByRole("button", { name: "Next page" }).count()).toBe(0)
          await shot(page, "05b-message-log-last-page")
          await page.getByRole("button", { name: "Back to newest" }).click()
          await expect.poll(logIds).toEqual(newest.slice(0, 2))
          // A message's detail: each job's attempts as a timeline, with status, timing and response.
          await page.getByRole("link", { name: "msg-fail-1" }).first().click()
          const failed = page.getByRole("article", { name: "Message msg-fail-1" })
          await failed.getByText("dead", { exact: true }).waitFor()
          expect(page.url()).toContain("/console/messages?messageId=msg-fail-1")
          const attemptRows = failed.locator("ol.attempts > li")
          expect(await attemptRows.count()).toBe(2)
          expect(await attemptRows.allTextContents()).toEqual(
            expect.arrayContaining([expect.stringMatching(/400.*permanent.*rejected by receiver/)])
          )
          expect(await failed.locator("ol.attempts .duration").first().textContent()).toMatch(/^\d+ ms$/)
          await shot(page, "05c-message-detail")
          await page.goto(`${base}/console/messages?messageId=msg-ok-1`)
          const delivered = page.getByRole("article", { name: "Message msg-ok-1" })
          await delivered.getByText("delivered", { exact: true }).waitFor()
          expect(await delivered.locator("ol.attempts").textContent()).toMatch(/200.*success/)

          // --- the dead letter: fix the receivers, replay it from the list, see it delivered ------
          const deadRow = page.locator(".dead-letters tbody tr", { hasText: "msg-fail-1" })
          await deadRow.waitFor()
          await shot(page, "06-dead-letters")
          fixed = true
          await deadRow.getByRole("button", { name: "Replay" }).click()
          await page.locator(".dead-letters").getByText("No dead letters.").waitFor()
          await page.goto(`${base}/console/messages?messageId=msg-fail-1`)
          const replayed = page.getByRole("article", { name: "Message msg-fail-1" })
          await replayed.getByText("delivered", { exact: true }).waitFor({ timeout: 15_000 })
          expect(await replayed.locator("ol.attempts > li").count()).toBeGreaterThanOrEqual(3)
          await page.getByText("No dead letters.").waitFor()
          await shot(page, "07-replayed")

          // --- usage: charts in SVG, totals equal to the API's and to what happened -----------
          await page.getByRole("link", { name: "Usage" }).click()
          await page.locator("[data-total=messages]").waitFor()
          expect(page.url()).toBe(`${base}/console/usage?sourceId=web&days=30`)
          const usage = (await Effect.runPromise(call(base, "GET", "/admin/sources/web/usage?days=30"))).body
          const sum = (field: string) => usage.days.reduce((acc: number, day: any) => acc + day[field], 0)
          const total = async (field: string) =>
            Number((await page.locator(`[data-total=${field}]`).textContent())!.replaceAll(",", ""))
          expect(await total("messages")).toBe(5)
          expect(await total("filtered")).toBe(1)
          expect(await total("apiCalls")).toBe(5)
          for (const field of ["apiCalls", "messages", "filtered", "delivered", "dead"]) {
            expect(await total(field), field).toBe(sum(field))
          }
          expect(await total("delivered")).toBeGreaterThanOrEqual(3)
          expect(usage.days).toHaveLength(30)
          const bars = page.locator("figure.chart").first().locator("svg g.series")
          expect(await bars.count()).toBe(4)
          expect(await page.locator("g[data-series=messages] rect").count()).toBe(1)
          expect(await page.locator("g[data-series=messages] rect title").textContent()).toMatch(/messages: 5$/)
          expect(await page.locator("g[data-series='average latency'] circle").count()).toBe(1)
          expect(await page.locator("[data-total=averageLatencyMs]").textContent()).toMatch(/^\d[\d,]* ms$/)
          await shot(page, "08-usage")

          // --- the backlog strip polls /admin/backlog --------------------------------------------
          const backlog = (await Effect.runPromise(call(base, "GET", "/admin/backlog"))).body
          await expect.poll(async () => await page.locator("[data-metric=delivered] b").textContent(), {
            timeout: 10_000
          })
            .toBe(String(backlog.delivered))
          // Throughput comes from successive readings: a number once two of them are in.
          await expect.poll(async () => await page.locator("[data-metric=throughput] b").textContent(), {
            timeout: 10_000
          })
            .toMatch(/^\d+(\.\d)?$/)
          await shot(page, "09-backlog-strip")

          // --- edit: the write key must be entered again, the secret rotated, the source disabled --
          await page.getByRole("link", { name: "Sources" }).click()
          await page.getByRole("link", { name: "Edit" }).click()
          await page.getByRole("heading", { name: "Source web" }).waitFor()
          const before = (await Effect.runPromise(call(base, "GET", "/admin/sources/web"))).body
          await page.getByRole("button", { name: "Save source" }).click()
          const keyErrors = page.locator("#f-writeKey-errors")
          await keyErrors.waitFor()
          expect(await keyErrors.textContent()).toMatch(/enter the write key again/)
          expect(await page.locator("#f-webhooks_sharedSecret-errors").textContent()).toMatch(/current secret again/)
          await page.getByLabel("Write key").fill(writeKey)
          await page.getByRole("button", { name: "Generate new (rotate)" }).nth(1).click()
          const rotated = await page.getByLabel("Shared secret", { exact: true }).inputValue()
          expect(rotated).toMatch(/^[A-Za-z0-9_-]{43}$/)
          await page.getByLabel("Enabled (off: nothing is delivered)").uncheck()
          await page.getByLabel("Write key").press("Enter")
          await page.getByText(/^Saved\./).waitFor()
          expect(await page.getByLabel("Shared secret", { exact: true }).inputValue()).toBe(rotated)
          await shot(page, "10-source-edited")
          const after = (await Effect.runPromise(call(base, "GET", "/admin/sources/web"))).body
          expect(after.webhooks.enabled).toBe(false)
          expect(after.webhooks.sharedSecret).toBe(`${rotated.slice(0, 4)}…${rotated.slice(-2)}`)
          expect(after.webhooks.sharedSecret).not.toBe(before.webhooks.sharedSecret)
          expect(after.webhooks.filters).toEqual(before.webhooks.filters)
          expect(after.webhooks.endpoints).toEqual(before.webhooks.endpoints)
          expect(after.writeKey).toBe(before.writeKey)

          // --- deep link reload, a token that stops working, logout ------------------------------
          await page.goto(`${base}/console/sources/web`)
          await page.getByRole("heading", { name: "Source web" }).waitFor()
          // The source page's panels (destinations, activity) finish loading first: the token stops working for the
          // next action, not under a request already on its way.
          await page.waitForLoadState("networkidle")
          await page.evaluate("sessionStorage.setItem('hookrelay.adminToken', 'revoked-token')")
          await page.getByRole("link", { name: "Sources" }).click()
          await page.getByText("Wrong token: the server refused it. Log in again.").waitFor()
          expect(await storedToken(page)).toBeNull()
          await page.getByLabel("Admin token").fill(adminToken)
          await page.getByRole("button", { name: "Log in" }).click()
          await page.getByRole("button", { name: "Log out" }).click()
          await page.getByLabel("Admin token").waitFor()
          expect(await storedToken(page)).toBeNull()

          // The token never travels in a URL, and nothing is fetched from another host.
          expect(requested.filter((url) => url.includes(adminToken))).toEqual([])
          expect(requested.filter((url) => !url.startsWith(base) && !url.startsWith("data:"))).toEqual([])
          expect(pageErrors).toEqual([])
          await context.close()
        })
      }),
    180_000
  )
})
