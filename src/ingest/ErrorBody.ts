import { HttpServerResponse } from "effect/http"
import type { MessageIssue } from "../domain/IngestErrors.js"

/** The JSON error answer of every hookrelay endpoint (REFERENCE §2 "Errors"). */
export interface ErrorBody {
  readonly success: false
  readonly code: string
  readonly message: string
  readonly errors: ReadonlyArray<MessageIssue>
}

export const errorResponse = (
  status: number,
  code: string,
  message: string,
  errors: ReadonlyArray<MessageIssue> = [],
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe({ success: false, code, message, errors } satisfies ErrorBody, { status, headers })
