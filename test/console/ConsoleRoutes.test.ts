import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import * as Path from "node:path"
import { consoleRoutes, contentTypeOf, resolveConsolePath } from "../../src/ingest/ConsoleRoutes.js"
import { startApp, tempDirectory } from "../support/app.js"
import { consoleDist, ensureConsoleBuilt } from "./build.js"

/** The static file route of the web console (REFERENCE §12): types, caching, deep links, traversal. */

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: string
}

/** A raw HTTP GET: the path is sent exactly as given (fetch would normalise `..` away). */
const rawGet = (port: number, path: string, headers: Record<string, string> = {}) =>
  Effect.callback<Answer>((resume) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "GET", headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resume(Effect.succeed({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString("utf8")
        })))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end()
  })

const indexHtml = "<!doctype html><title>console</title><script type=\"module\" src=\"/console/assets/app-1a2b.js\">"
const script = "console.log('app')"
const style = "body{margin:0}"
const secret = "TOP-SECRET-OUTSIDE-THE-CONSOLE"

/** A built console in a temporary directory, with a file beside it that must never be served. */
const fixture = Effect.gen(function*() {
  const directory = yield* tempDirectory
  const root = Path.join(directory, "dist")
  mkdirSync(Path.join(root, "assets"), { recursive: true })
  writeFileSync(Path.join(root, "index.html"), indexHtml)
  writeFileSync(Path.join(root, "assets", "app-1a2b.js"), script)
  writeFileSync(Path.join(root, "assets", "app-1a2b.css"), style)
  writeFileSync(Path.join(root, ".env"), secret)
  writeFileSync(Path.join(directory, "secret.txt"), secret)
  return root
})

const serve = (root: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      HttpRouter.serve(HttpRouter.addAll(consoleRoutes(root)), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    const server = yield* Effect.provide(HttpServer.HttpServer, context)
    return server.address._tag === "UnixPathAddress" ? 0 : server.address.port
  })

describe("console static files", () => {
  it.effect("serves index.html at /console and /console/ with no-cache, and hashed assets as immutable", () =>
    Effect.gen(function*() {
      const port = yield* serve(yield* fixture)
      for (const path of ["/console", "/console/"]) {
        const answer = yield* rawGet(port, path)
        expect(answer.status).toBe(200)
        expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(answer.headers["cache-control"]).toBe("no-cache")
        expect(answer.headers["content-security-policy"]).toContain("default-src 'self'")
        expect(answer.headers["x-content-type-options"]).toBe("nosniff")
        expect(answer.body).toBe(indexHtml)
      }
      const js = yield* rawGet(port, "/console/assets/app-1a2b.js")
      expect(js.status).toBe(200)
      expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8")
      expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
      expect(js.body).toBe(script)
      const css = yield* rawGet(port, "/console/assets/app-1a2b.css")
      expect(css.headers["content-type"]).toBe("text/css; charset=utf-8")
      expect(css.body).toBe(style)
    }))

  it.effect("answers deep links with index.html, and a missing file with 404 (not the page)", () =>
    Effect.gen(function*() {
      const port = yield* serve(yield* fixture)
      for (const path of ["/console/sources", "/console/sources/web-site", "/console/messages?userId=u1"]) {
        const answer = yield* rawGet(port, path)
        expect(answer.status, path).toBe(200)
        expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(answer.body).toBe(indexHtml)
      }
      for (const path of ["/console/assets/gone-0000.js", "/console/favicon.ico", "/console/assets/chunk"]) {
        const answer = yield* rawGet(port, path)
        expect(answer.status, path).toBe(404)
        expect(answer.headers["content-type"]).toBe("application/json")
        expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: "not_found" })
      }
    }))

  it.effect("refuses every path that tries to leave the console directory or reach a dot file", () =>
    Effect.gen(function*() {
      const port = yield* serve(yield* fixture)
      const attempts = [
        "/console/../secret.txt",
        "/console/assets/../../secret.txt",
        "/console/%2e%2e/secret.txt",
        "/console/assets/..%2f..%2fsecret.txt",
        "/console/assets/%2e%2e%5c%2e%2e%5csecret.txt",
        "/console/.env",
        "/console/%2eenv",
        "/console/assets/%00.js",
        "/console/%E0%A4%A"
      ]
      for (const path of attempts) {
        const answer = yield* rawGet(port, path)
        expect(answer.body, path).not.toContain(secret)
        expect([400, 404], path).toContain(answer.status)
      }
      // The ones that reach the console route are refused by it as invalid, not looked up.
      for (const path of ["/console/%2e%2e/secret.txt", "/console/assets/..%2f..%2fsecret.txt", "/console/.env"]) {
        const answer = yield* rawGet(port, path)
        expect(answer.status, path).toBe(400)
        expect(JSON.parse(answer.body)).toMatchObject({ code: "invalid_path" })
      }
    }))

  it.effect("answers 304 to a matching If-None-Match", () =>
    Effect.gen(function*() {
      const port = yield* serve(yield* fixture)
      const first = yield* rawGet(port, "/console/")
      const etag = String(first.headers.etag)
      expect(etag).toMatch(/^".+"$/)
      const again = yield* rawGet(port, "/console/sources", { "if-none-match": etag })
      expect(again.status).toBe(304)
      expect(again.body).toBe("")
    }))

  it.effect("says how to build the console when it is not built", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const port = yield* serve(Path.join(directory, "nothing-here"))
      for (const path of ["/console/", "/console/usage"]) {
        const answer = yield* rawGet(port, path)
        expect(answer.status).toBe(404)
        expect(JSON.parse(answer.body)).toMatchObject({ code: "console_not_built" })
        expect(JSON.parse(answer.body).message).toContain("npm run build")
      }
    }))

  it("maps paths and file types", () => {
    expect(resolveConsolePath("/console")).toEqual({ _tag: "File", relative: "index.html" })
    expect(resolveConsolePath("/console/")).toEqual({ _tag: "File", relative: "index.html" })
    expect(resolveConsolePath("/console/assets/a.js")).toEqual({ _tag: "File", relative: "assets/a.js" })
    expect(resolveConsolePath("/console/usage")).toEqual({ _tag: "Fallback" })
    expect(resolveConsolePath("/console/a/%2e%2e/b")).toEqual({ _tag: "Refused" })
    expect(contentTypeOf("x.html")).toBe("text/html; charset=utf-8")
    expect(contentTypeOf("x.svg")).toBe("image/svg+xml")
    expect(contentTypeOf("x.woff2")).toBe("font/woff2")
    expect(contentTypeOf("x.bin")).toBe("application/octet-stream")
  })

  it.effect(
    "is mounted by the hookrelay server on the built console, and leaves other paths alone",
    () =>
      Effect.gen(function*() {
        yield* Effect.promise(ensureConsoleBuilt)
        const app = yield* startApp()
        const port = Number(new URL(app.baseUrl).port)
        const page = yield* rawGet(port, "/console/sources/web")
        expect(page.status).toBe(200)
        expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(page.body).toBe(readFileSync(Path.join(consoleDist, "index.html"), "utf8"))
        const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.body)?.[1]
        expect(script).toBeDefined()
        const asset = yield* rawGet(port, script!)
        expect(asset.status).toBe(200)
        expect(asset.headers["content-type"]).toBe("text/javascript; charset=utf-8")
        // No other host is named in the bundle but XML namespaces and the URL field's example: the
        // console loads nothing from elsewhere and works offline.
        const urls = [...asset.body.matchAll(/https?:\/\/[^"'`\s)]*/gi)].map((match) => match[0])
        expect(urls.filter((url) => !/^(http:\/\/www\.w3\.org\/|https:\/\/example\.com\/)/.test(url))).toEqual([])
        expect(asset.body).not.toContain("fileName:")
        const other = yield* rawGet(port, "/consolex")
        expect(other.status).toBe(404)
        expect(JSON.parse(other.body)).toMatchObject({ code: "not_found" })
      }),
    180_000
  )
})
