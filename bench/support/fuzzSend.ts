/**
 * Sends one soak input and says how it ended: answered (with its status), hung (no answer within the deadline), reset
 * or closed by the server without an answer, or refused by the HTTP client itself before anything was sent.
 */
import { connect } from "node:net"
import type { Pool } from "undici"
import type { Case, HttpCase, RawCase } from "./fuzzCase.js"

export type Answer =
  | { readonly kind: "answered"; readonly status: number; readonly body: string }
  | { readonly kind: "hung" }
  | { readonly kind: "reset"; readonly error: string }
  | { readonly kind: "closed" }
  | { readonly kind: "not sent"; readonly error: string }

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"])
const clientCodes = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_NOT_SUPPORTED",
  "ERR_INVALID_ARG_TYPE",
  "ERR_INVALID_ARG_VALUE"
])

const sendHttp = async (pool: Pool, fuzzCase: HttpCase): Promise<Answer> => {
  try {
    const response = await pool.request({
      method: fuzzCase.method,
      path: fuzzCase.path,
      headers: fuzzCase.headers,
      body: fuzzCase.body ?? null
    })
    const body = await response.body.text()
    return { kind: "answered", status: response.statusCode, body: body.slice(0, 300) }
  } catch (error) {
    const code = (error as { code?: string }).code ?? ""
    if (timeoutCodes.has(code)) return { kind: "hung" }
    if (clientCodes.has(code)) return { kind: "not sent", error: `${code}: ${(error as Error).message}` }
    return { kind: "reset", error: `${code}: ${(error as Error).message}` }
  }
}

/** The status of the first final answer in `bytes` (1xx answers skipped), once its head has arrived. */
const finalStatus = (text: string): number | undefined => {
  let rest = text
  while (true) {
    const match = /^HTTP\/\d\.\d (\d{3})[^\r\n]*\r?\n/.exec(rest)
    const end = rest.indexOf("\r\n\r\n")
    if (match === null || end === -1) return undefined
    const status = Number(match[1])
    if (status >= 200) return status
    rest = rest.slice(end + 4)
  }
}

const sendRaw = (port: number, fuzzCase: RawCase, timeoutMillis: number): Promise<Answer> =>
  new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port })
    let text = ""
    let done = false
    const finish = (answer: Answer) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(answer)
    }
    const timer = setTimeout(() => finish({ kind: "hung" }), timeoutMillis)
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1")
      const status = finalStatus(text)
      if (status !== undefined) finish({ kind: "answered", status, body: text.slice(0, 300) })
    })
    socket.on("error", (error) => finish({ kind: "reset", error: error.message }))
    socket.on(
      "close",
      () => finish(text.length > 0 ? { kind: "reset", error: "closed mid-answer" } : { kind: "closed" })
    )
    socket.write(fuzzCase.bytes)
  })

export const sendCase = (pool: Pool, port: number, fuzzCase: Case, timeoutMillis: number): Promise<Answer> =>
  fuzzCase.kind === "http" ? sendHttp(pool, fuzzCase) : sendRaw(port, fuzzCase, timeoutMillis)
