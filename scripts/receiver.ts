/**
 * A tiny webhook receiver for trying hookrelay out (README "Quick start"): it prints every
 * request hookrelay delivers — method, path, the headers that matter, the JSON body — checks its
 * `X-Signature` and answers.
 *
 *   RECEIVER_PORT    port on 127.0.0.1 (default 9000)
 *   RECEIVER_SECRET  the source's shared secret: each signature is checked against it
 *   RECEIVER_STATUS  the status it answers (default 200); e.g. 410 to watch messages dead-letter
 *
 * Plain node:http on purpose: nothing here is hookrelay code.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"

const port = Number(process.env.RECEIVER_PORT ?? "9000")
const secret = process.env.RECEIVER_SECRET === "" ? undefined : process.env.RECEIVER_SECRET
const status = Number(process.env.RECEIVER_STATUS ?? "200")
const host = "127.0.0.1"
const maxBodyBytes = 1024 * 1024

if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`RECEIVER_PORT must be a port number, got ${process.env.RECEIVER_PORT}`)
  process.exit(1)
}
if (!Number.isInteger(status) || status < 200 || status > 599) {
  console.error(`RECEIVER_STATUS must be an HTTP status from 200 to 599, got ${process.env.RECEIVER_STATUS}`)
  process.exit(1)
}

// hookrelay's own headers, then whatever static headers the source adds (x-…, authorization).
const interesting = (name: string) =>
  ["user-agent", "content-type", "content-length", "x-signature", "authorization"].includes(name) ||
  name.startsWith("x-")

const signatureCheck = (headers: IncomingHttpHeaders, body: Buffer): string => {
  const given = headers["x-signature"]
  if (typeof given !== "string") return "unsigned"
  if (secret === undefined) return "signature not checked (set RECEIVER_SECRET to check it)"
  const expected = createHmac("sha1", secret).update(body).digest("hex")
  const matches = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected))
  return matches ? "signature ok" : "signature MISMATCH"
}

const pretty = (body: Buffer): string => {
  const text = body.toString("utf8")
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text === "" ? "(empty body)" : text
  }
}

let count = 0

const server = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  let size = 0
  request.on("data", (chunk: Buffer) => {
    size += chunk.length
    if (size <= maxBodyBytes) chunks.push(chunk)
  })
  request.on("end", () => {
    const body = Buffer.concat(chunks)
    count += 1
    const lines = [`#${count} ${new Date().toISOString()} ${request.method} ${request.url}`]
    for (const [name, value] of Object.entries(request.headers)) {
      if (interesting(name)) lines.push(`  ${name}: ${Array.isArray(value) ? value.join(", ") : value}`)
    }
    lines.push(`  ${signatureCheck(request.headers, body)}`)
    lines.push(pretty(body).replace(/^/gm, "  "))
    lines.push(`  → ${status}`)
    console.log(`${lines.join("\n")}\n`)
    response.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok\n" : `answered ${status}\n`)
  })
})

server.on("error", (error) => {
  console.error(`receiver: ${error.message}`)
  process.exit(1)
})

server.listen(port, host, () => {
  console.log(
    `receiver listening on http://${host}:${port} — answering ${status}, ` +
      (secret === undefined ? "signatures not checked (RECEIVER_SECRET unset)" : "checking X-Signature")
  )
})

const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
