/**
 * The shape of one soak input (`bench/soak.ts`), whatever part of the API it reaches: an HTTP request sent by a client
 * that follows HTTP, or raw bytes written on a socket of its own. Each says which messages it carries, so that the soak
 * can check that the ones answered 200 are delivered exactly once and the others never.
 */

/** A message id a request carries, and whether REFERENCE §2's `integrations` rule lets it reach the webhook. */
export interface Carried {
  readonly id: string
  readonly deliver: boolean
}

/** What the REFERENCE says the answer is: a 200, a 4xx, or either (a tolerance it leaves open). */
export type Expect = "200" | "4xx" | "any"

interface CaseBase {
  /** The input's family, for the answers-by-family table. */
  readonly label: string
  readonly expect: Expect
  /** The messages stored when the answer is 200 (all of them, a request is all or nothing). */
  readonly carried: ReadonlyArray<Carried>
  /** Messages without an id (the server makes one) that would be delivered when the answer is 200. */
  readonly anonymous: number
  /** An accepted admin deletion that reaches the soak's source: one delete notification expected. */
  readonly deletion?: boolean | undefined
}

export interface HttpCase extends CaseBase {
  readonly kind: "http"
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Buffer | undefined
}

export interface RawCase extends CaseBase {
  readonly kind: "raw"
  readonly bytes: Buffer
}

export type Case = HttpCase | RawCase

/** What every case generator is given: the soak's source and the numbering of message ids. */
export interface FuzzContext {
  readonly writeKey: string
  readonly sourceId: string
  readonly adminToken: string
  /** A message id no other case uses (ASCII, time-ordered within the run). */
  readonly nextId: () => string
  /** Remembers a case that may be sent again (a client retrying), and recalls one sent earlier. */
  readonly remember: (fuzzCase: HttpCase) => void
  readonly recall: (pick: number) => HttpCase | undefined
}

export const basic = (user: string, password = "") => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`

/** REFERENCE §2: on by default; `Webhooks: false` off; `All: false` off unless `Webhooks` is `true` or an object. */
export const selectsWebhooks = (integrations: unknown): boolean => {
  if (typeof integrations !== "object" || integrations === null) return true
  const record = integrations as Record<string, unknown>
  const own = record.Webhooks
  if (own === false) return false
  if (own === true || (typeof own === "object" && own !== null)) return true
  return record.All !== false
}
