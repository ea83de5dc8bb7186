/**
 * The first floor of the ingest benchmarks (`bench/endToEnd.ts`, `bench/webSources.ts`): a plain `node:http` server
 * that reads each request's body, parses it as JSON and answers `200 {"success":true}` at once — no store, no
 * validation. Under the same load as the hookrelay server, it shows what a request costs between two processes on
 * this machine. Plain JavaScript, started with plain `node`. Listens on an ephemeral loopback
 * port and sends it to its parent over IPC; exits when the parent disconnects.
 */
/* global Buffer, process */
import { createServer } from "node:http"

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString("utf8"))
      response.writeHead(200, { "content-type": "application/json" }).end("{\"success\":true}")
    } catch {
      response.writeHead(400, { "content-type": "application/json" }).end("{\"success\":false}")
    }
  })
})
server.keepAliveTimeout = 30_000
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.send?.({ type: "listening", port: typeof address === "object" && address !== null ? address.port : 0 })
})
process.on("disconnect", () => server.close(() => process.exit(0)))
