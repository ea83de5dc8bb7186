/**
 * A tiny webhook receiver for trying hookrelay out (README "Quick start"): it prints every
 * request hookrelay delivers — method, path, the headers that matter, the JSON body — checks its
 * signatures and answers. It prints which signatures matched.
 *
 *   RECEIVER_PORT        port (default 9000)
 *   RECEIVER_HOST        address to listen on (default 127.0.0.1; 0.0.0.0 in a container, see compose.yaml)
 *   RECEIVER_SECRET      the source's shared secret: `X-Signature` is checked against it
 *   RECEIVER_WHSEC       Standard Webhooks secrets (`whsec_…`, comma-separated): `v1` signatures are
 *                        checked with the `standardwebhooks` package
 *   RECEIVER_PUBLIC_KEY  the source's `whpk_…` public key: `v1a` (ed25519) signatures are checked
 *   RECEIVER_STATUS      the status it answers (default 200); e.g. 410 to watch messages dead-letter
 *
 * Plain node:http and the reference packages on purpose: nothing here is hookrelay code.
 */
import { createHmac, createPublicKey, timingSafeEqual, verify } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { Webhook } from "standardwebhooks"

const port = Number(process.env.RECEIVER_PORT ?? "9000")
const secret = process.env.RECEIVER_SECRET === "" ? undefined : process.env.RECEIVER_SECRET
const status = Number(process.env.RECEIVER_STATUS ?? "200")
const standardSecrets = (process.env.RECEIVER_WHSEC ?? "").split(",").map((value) => value.trim()).filter(Boolean)
const publicKey = process.env.RECEIVER_PUBLIC_KEY === "" ? undefined : process.env.RECEIVER_PUBLIC_KEY
const host = process.env.RECEIVER_HOST || "127.0.0.1"
const maxBodyBytes = 1024 * 1024

if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`RECEIVER_PORT must be a port number, got ${process.env.RECEIVER_PORT}`)
  process.exit(1)
}
if (!Number.isInteger(status) || status < 200 || status > 599) {
  console.error(`RECEIVER_STATUS must be an HTTP status from 200 to 599, got ${process.env.RECEIVER_STATUS}`)
  process.exit(1)
}

for (const [index, given] of standardSecrets.entries()) {
  try {
    new Webhook(given)
  } catch {
    console.error(`RECEIVER_WHSEC: secret ${index + 1} is not a whsec_ secret`)
    process.exit(1)
  }
}
if (publicKey !== undefined && !publicKey.startsWith("whpk_")) {
  console.error("RECEIVER_PUBLIC_KEY must be the source's whpk_ public key")
  process.exit(1)
}

// hookrelay's own headers, then whatever static headers the source adds (x-…, authorization).
const interesting = (name: string) =>
  ["user-agent", "content-type", "content-length", "x-signature", "authorization"].includes(name) ||
  name.startsWith("x-") || name.startsWith("webhook-")

const signatureCheck = (headers: IncomingHttpHeaders, body: Buffer): string => {
  const given = headers["x-signature"]
  if (typeof given !== "string") return typeof headers["webhook-signature"] === "string" ? "no X-Signature" : "unsigned"
  if (secret === undefined) return "signature not checked (set RECEIVER_SECRET to check it)"
  const expected = createHmac("sha1", secret).update(body).digest("hex")
  const matches = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected))
  return matches ? "signature ok" : "signature MISMATCH"
}

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return typeof value === "string" ? value : undefined
}

/** Which `v1` signatures verify, one line per configured secret (the `standardwebhooks` package decides). */
const standardChecks = (headers: IncomingHttpHeaders, body: Buffer): Array<string> => {
  const id = header(headers, "webhook-id")
  const timestamp = header(headers, "webhook-timestamp")
  const signature = header(headers, "webhook-signature")
  if (id === undefined || timestamp === undefined || signature === undefined) return []
  const lines: Array<string> = []
  const v1 = signature.split(" ").filter((part) => part.startsWith("v1,")).length
  if (v1 > 0 && standardSecrets.length === 0) lines.push(`${v1} v1 signature(s) not checked (set RECEIVER_WHSEC)`)
  for (const [index, given] of standardSecrets.entries()) {
    try {
      new Webhook(given).verify(body, {
        "webhook-id": id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signature
      })
      lines.push(`v1 ok with secret ${index + 1} (${given.slice(0, 10)}…)`)
    } catch (error) {
      lines.push(`v1 MISMATCH with secret ${index + 1} (${given.slice(0, 10)}…): ${(error as Error).message}`)
    }
  }
  const v1a = signature.split(" ").filter((part) => part.startsWith("v1a,"))
  if (v1a.length > 0 && publicKey === undefined) lines.push("v1a signature not checked (set RECEIVER_PUBLIC_KEY)")
  if (v1a.length > 0 && publicKey !== undefined) {
    const key = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey.slice(5), "base64").toString("base64url") },
      format: "jwk"
    })
    const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body])
    const ok = v1a.some((part) => verify(null, content, key, Buffer.from(part.slice(4), "base64")))
    lines.push(ok ? "v1a ok with the public key" : "v1a MISMATCH with the public key")
  }
  return lines
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
    for (const line of standardChecks(request.headers, body)) lines.push(`  ${line}`)
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
      (secret === undefined ? "X-Signature not checked (RECEIVER_SECRET unset)" : "checking X-Signature") +
      (standardSecrets.length > 0 ? `, v1 with ${standardSecrets.length} whsec_ secret(s)` : "") +
      (publicKey !== undefined ? ", v1a with the public key" : "")
  )
})

const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
