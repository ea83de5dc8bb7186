import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { readFile, stat } from "node:fs/promises"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { errorResponse } from "./ErrorBody.js"

/**
 * Where `npm run build` puts the console (console/dist at the package root): the same relative
 * place from src/ingest (tsx, tests) and from dist/ingest (the installed package).
 */
export const defaultConsoleDirectory = fileURLToPath(new URL("../../console/dist/", import.meta.url))

export const consolePrefix = "/console"

const contentTypes: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}

export const contentTypeOf = (file: string): string =>
  contentTypes[Path.extname(file).toLowerCase()] ?? "application/octet-stream"

// The console talks only to this server and loads nothing from elsewhere (REFERENCE §12).
const securityHeaders = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

// Vite names the files under assets/ by their content: they never change, so they are cached for good.
const immutable = "public, max-age=31536000, immutable"
// index.html names the current assets: always revalidated (cheap with the ETag).
const revalidate = "no-cache"

type Resolved =
  | { readonly _tag: "Refused" }
  | { readonly _tag: "File"; readonly relative: string }
  | { readonly _tag: "Fallback" }

/**
 * The file a request path below /console names, checked segment by segment: encoded or plain `..`,
 * `.` and dot files, backslashes and NUL are refused, so nothing outside the console directory can
 * be named. Paths without a file extension are the single-page app's own routes (deep links).
 */
export const resolveConsolePath = (pathname: string): Resolved => {
  const below = pathname === consolePrefix ? "" : pathname.slice(consolePrefix.length + 1)
  let decoded: Array<string>
  try {
    decoded = below.split("/").map((segment) => decodeURIComponent(segment))
  } catch {
    return { _tag: "Refused" }
  }
  const segments = decoded.filter((segment) => segment !== "")
  for (const segment of segments) {
    if (segment.startsWith(".") || segment.includes("/") || segment.includes("\\") || segment.includes("\0")) {
      return { _tag: "Refused" }
    }
  }
  if (segments.length === 0) return { _tag: "File", relative: "index.html" }
  const relative = segments.join("/")
  const last = segments[segments.length - 1]!
  if (segments[0] === "assets" || last.includes(".")) return { _tag: "File", relative }
  return { _tag: "Fallback" }
}

const readIfFile = (file: string) =>
  Effect.tryPromise(async () => ((await stat(file)).isFile() ? await readFile(file) : undefined)).pipe(
    Effect.orElseSucceed(() => undefined)
  )

const etagOf = (bytes: Uint8Array) => `"${createHash("sha1").update(bytes).digest("base64url")}"`

const serveFile = (bytes: Uint8Array, file: string, cacheControl: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const etag = etagOf(bytes)
    const headers = { ...securityHeaders, "cache-control": cacheControl, etag }
    if (request.headers["if-none-match"] === etag) return HttpServerResponse.empty({ status: 304, headers })
    return HttpServerResponse.uint8Array(bytes, { contentType: contentTypeOf(file), headers })
  })

/**
 * The web console (REFERENCE §12) as static files from `directory`: `/console` and `/console/` answer
 * index.html, `/console/assets/*` the built files, any other extension-less path index.html again
 * (the app's routes), a missing file 404, a path that tries to leave the directory 400.
 */
export const consoleRoutes = (directory: string = defaultConsoleDirectory) => {
  const root = Path.resolve(directory)
  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const pathname = request.url.split("?")[0]!.split("#")[0]!
    const resolved = resolveConsolePath(pathname)
    switch (resolved._tag) {
      case "Refused":
        return errorResponse(400, "invalid_path", "this path is not allowed", [], securityHeaders)
      case "File": {
        const file = Path.resolve(root, resolved.relative)
        if (!file.startsWith(root + Path.sep)) {
          return errorResponse(400, "invalid_path", "this path is not allowed", [], securityHeaders)
        }
        const bytes = yield* readIfFile(file)
        if (bytes !== undefined) {
          const isAsset = resolved.relative.startsWith("assets/")
          return yield* serveFile(bytes, file, isAsset ? immutable : revalidate)
        }
        if (resolved.relative === "index.html") return notBuilt
        return errorResponse(404, "not_found", "no such file", [], securityHeaders)
      }
      case "Fallback": {
        const index = Path.join(root, "index.html")
        const bytes = yield* readIfFile(index)
        return bytes === undefined ? notBuilt : yield* serveFile(bytes, index, revalidate)
      }
    }
  })
  // A path ending in `/*` is routed without it too: this one route answers `/console` as well.
  return [HttpRouter.route("GET", `${consolePrefix}/*`, handler)]
}

const notBuilt = errorResponse(
  404,
  "console_not_built",
  "the web console is not built: run `npm run build` (npm start does it when it is missing)"
)
