import type { ReceivedRequest } from "../delivery/support.js"

/** The shared HTTP helpers (admin calls with the test token, tracking calls, signatures), plus a few of our own. */
export { basic, call as admin, pollUntil, signatureOf, track } from "../support/http.js"
export type { Answer } from "../support/http.js"

/** A delivered request's JSON body. */
export const parsed = (request: ReceivedRequest) => JSON.parse(request.body.toString("utf8")) as Record<string, any>

export const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
