import { Context } from "effect"
import type { OutboxShape } from "../store/Outbox.js"
import type { AttemptInput } from "./Attempt.js"

/**
 * What delivery needs from telemetry, declared here and provided by `telemetry/` when it is on (as `YieldToIngest` is
 * by `overload/`). The dispatcher looks it up once when it starts: without it, no attempt or batch makes a span.
 */
export interface DeliveryTracingShape {
  /**
   * Starts an attempt's span (its parent: the job's stored `traceparent`, if any) and answers the input the attempt
   * runs with instead: its request carries the span's `traceparent`, and its record ends the span.
   */
  readonly attempt: (input: AttemptInput, traceparent: string | undefined) => AttemptInput
  /** The outbox the dispatcher claims from and completes into, with a span per claim and per completion batch. */
  readonly outbox: (outbox: OutboxShape) => OutboxShape
}

export class DeliveryTracing
  extends Context.Service<DeliveryTracing, DeliveryTracingShape>()("hookrelay/DeliveryTracing")
{}
