import type { ComponentChildren } from "preact"
import { ApiError } from "../api.js"
import { href, onLinkClick } from "../router.js"
import type { FieldIssue } from "../types.js"

export const Link = (props: {
  readonly to: string
  readonly children: ComponentChildren
  readonly class?: string
  readonly current?: boolean
}) => (
  <a
    href={href(props.to)}
    onClick={onLinkClick(props.to)}
    class={props.class}
    aria-current={props.current === true ? "page" : undefined}
  >
    {props.children}
  </a>
)

/** A time as the operator reads it: local date and time to the second. */
export const formatTime = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return iso
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${
    pad(date.getMinutes())
  }:${pad(date.getSeconds())}`
}

export const formatNumber = (value: number): string => value.toLocaleString("en-US")

export const formatMs = (value: number | null | undefined): string =>
  value === null || value === undefined ? "—" : `${formatNumber(Math.round(value))} ms`

export const StatusBadge = (props: { readonly status: string }) => (
  <span class={`badge badge-${props.status}`}>{props.status}</span>
)

/** The message of a failed call, for a banner. */
export const describeError = (error: unknown): string => {
  if (error instanceof ApiError) {
    if (error.status === 0) return error.message
    return `${error.message} (HTTP ${error.status})`
  }
  return error instanceof Error ? error.message : String(error)
}

export const ErrorBanner = (props: { readonly error: unknown }) =>
  props.error === undefined || props.error === null ? null : (
    <div class="banner banner-error" role="alert">
      {describeError(props.error)}
    </div>
  )

/** Validation messages under one input; `id` lets the input point at them with aria-describedby. */
export const FieldErrors = (props: { readonly id: string; readonly issues: ReadonlyArray<FieldIssue> | undefined }) =>
  props.issues === undefined || props.issues.length === 0 ? null : (
    <ul class="field-errors" id={props.id}>
      {props.issues.map((issue, i) => <li key={i}>{issue.message}</li>)}
    </ul>
  )

export const Empty = (props: { readonly children: ComponentChildren }) => <p class="empty">{props.children}</p>

/** A form's refusal: how many problems (shown at their fields), and those that belong to no field. */
export const NotSaved = (props: {
  readonly what: string
  readonly issues: ReadonlyArray<FieldIssue>
  readonly formIssues: ReadonlyArray<FieldIssue>
}) =>
  props.issues.length === 0 ? null : (
    <div class="banner banner-error" role="alert">
      <strong>{props.what} not saved.</strong>{" "}
      {props.issues.length === 1 ? "One problem" : `${props.issues.length} problems`} shown next to the fields.
      {props.formIssues.length > 0 && (
        <ul>
          {props.formIssues.map((issue, i) => (
            <li key={i}>{issue.path === "" ? "" : `${issue.path}: `}{issue.message}</li>
          ))}
        </ul>
      )}
    </div>
  )
