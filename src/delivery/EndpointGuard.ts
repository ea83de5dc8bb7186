import { Effect } from "effect"
import type { Clock } from "effect"
import type { Endpoint } from "../domain/Settings.js"
import type { AttemptOutcome } from "./AttemptOutcome.js"

/**
 * What the guard lets an attempt do: `go`, `probe` (the one attempt that tests an open circuit), `unavailable` (the
 * job's window ended while it was held) or `disabled` (the URL receives nothing).
 */
export type Pass = "go" | "probe" | "unavailable" | "disabled"

export type CircuitState = "closed" | "open" | "probing" | "disabled"

/** What an operator is told about a URL (logged at warn, sent to the operator webhook). */
export type GuardEvent =
  | { readonly type: "endpoint.circuit_opened"; readonly url: string; readonly at: number; readonly reason: string }
  | { readonly type: "endpoint.recovered"; readonly url: string; readonly at: number; readonly reason: string }
  | { readonly type: "endpoint.disabled"; readonly url: string; readonly at: number; readonly reason: string }

/** The URL's health as this process sees it. */
export interface GuardSnapshot {
  readonly url: string
  readonly state: CircuitState
  readonly consecutiveFailures: number
  readonly lastSuccessAt: number | undefined
  readonly lastFailureAt: number | undefined
  readonly lastFailure: string | undefined
  /** When the next probe may go (open circuit only). */
  readonly nextProbeAt: number | undefined
}

export const defaultFailureThreshold = 10
export const defaultDisableAfterHours = 72
const coolOffFirst = 5_000
const coolOffMax = 300_000

/**
 * One URL's circuit breaker, token bucket and health counters, on the Clock. Attempts ask `tryPass` (synchronous, no
 * allocation: the closed circuit's path) or wait in `pass`; every outcome is `report`ed. After `failureThreshold`
 * consecutive retryable failures the circuit opens: attempts are held (they are not attempted and not recorded) until
 * one probe, after a cool-off doubling from 5 s to 5 min, succeeds. Held attempts sleep on timers and a wake-up list:
 * a failing endpoint costs nothing per held job.
 */
export class EndpointGuard {
  state: CircuitState = "closed"
  consecutiveFailures = 0
  lastSuccessAt: number | undefined
  lastFailureAt: number | undefined
  lastFailure: string | undefined
  nextProbeAt = 0
  /** The first failure since the last success: the no-success period counts from it. */
  private failingSince: number | undefined
  private coolOff = coolOffFirst
  private wakers: Array<() => void> = []
  /** Milliseconds between two attempts (0: no rate limit), and when the next one may start. */
  private interval = 0
  private nextFreeAt = 0
  private threshold = defaultFailureThreshold
  private disableAfterMillis = defaultDisableAfterHours * 3_600_000

  constructor(
    readonly url: string,
    private readonly clock: Clock.Clock,
    private readonly emit: (event: GuardEvent) => void
  ) {}

  /** The endpoint's settings (circuit and rate limit); called when settings are read, not per attempt. */
  configure(endpoint: Endpoint): void {
    this.threshold = endpoint.circuit?.failureThreshold ?? defaultFailureThreshold
    this.disableAfterMillis = (endpoint.circuit?.disableAfterHours ?? defaultDisableAfterHours) * 3_600_000
    this.interval = endpoint.rateLimit === undefined ? 0 : 1000 / endpoint.rateLimit.perSecond
  }

  /** The attempt may go now (closed circuit, a token free): taken. */
  tryPass(): boolean {
    if (this.state !== "closed") return false
    if (this.interval === 0) return true
    const now = this.clock.currentTimeMillisUnsafe()
    if (now < this.nextFreeAt) return false
    this.nextFreeAt = now + this.interval
    return true
  }

  /** Waits until the attempt may go, or the job's window (`lastStart`, epoch ms) ends. Interruptible. */
  pass(lastStart: number): Effect.Effect<Pass> {
    const step = (): Effect.Effect<Pass> => {
      const now = this.clock.currentTimeMillisUnsafe()
      if (this.state === "disabled") return Effect.succeed("disabled")
      if (this.state === "closed") {
        if (this.interval === 0) return Effect.succeed("go")
        // A reservation: each waiter has its own instant, so a released token wakes nobody else.
        const at = Math.max(now, this.nextFreeAt)
        if (at > lastStart) return Effect.succeed("unavailable")
        this.nextFreeAt = at + this.interval
        return at <= now ? Effect.succeed("go") : Effect.as(Effect.sleep(at - now), "go")
      }
      if (now > lastStart) return Effect.succeed("unavailable")
      if (this.state === "open" && now >= this.nextProbeAt) {
        this.state = "probing"
        return Effect.succeed("probe")
      }
      const until = this.state === "open" ? Math.min(this.nextProbeAt, lastStart + 1) : lastStart + 1
      return Effect.andThen(this.wait(until - now), Effect.suspend(step))
    }
    return Effect.suspend(step)
  }

  /** Sleeps `millis`, or less when the circuit's state changes. */
  private wait(millis: number): Effect.Effect<void> {
    const woken = Effect.callback<void>((resume) => {
      const waker = () => resume(Effect.void)
      this.wakers.push(waker)
      return Effect.sync(() => {
        const index = this.wakers.indexOf(waker)
        if (index >= 0) this.wakers.splice(index, 1)
      })
    })
    return Effect.raceFirst(woken, Effect.sleep(millis))
  }

  private wakeAll(): void {
    const wakers = this.wakers
    this.wakers = []
    for (const waker of wakers) waker()
  }

  /** An attempt's outcome; `probe`: it was the open circuit's probe. */
  report(outcome: AttemptOutcome, probe: boolean): void {
    const now = this.clock.currentTimeMillisUnsafe()
    if (outcome._tag === "Success") {
      this.lastSuccessAt = now
      this.failingSince = undefined
      return this.reachable(now)
    }
    this.lastFailureAt = now
    this.lastFailure = outcome.reason
    this.failingSince ??= now
    if (outcome._tag === "Permanent" && outcome.status === 410) return this.disable("HTTP 410 Gone")
    if (this.state !== "disabled" && now - this.failingSince >= this.disableAfterMillis) {
      return this.disable(`no success for ${this.disableAfterMillis / 3_600_000} h`)
    }
    // A refusal with a status came from a receiver that is up; a 429 asks for a pause, which its Retry-After gives.
    if (outcome._tag === "Permanent" && outcome.status !== undefined) return this.reachable(now)
    if (outcome.status === 429) {
      if (probe) this.reachable(now)
      return
    }
    this.consecutiveFailures += 1
    if (probe && this.state === "probing") {
      this.coolOff = Math.min(this.coolOff * 2, coolOffMax)
      this.state = "open"
      this.nextProbeAt = now + this.coolOff
      this.wakeAll()
    } else if (this.state === "closed" && this.consecutiveFailures >= this.threshold) {
      this.coolOff = coolOffFirst
      this.state = "open"
      this.nextProbeAt = now + this.coolOff
      this.emit({
        type: "endpoint.circuit_opened",
        url: this.url,
        at: now,
        reason: `${this.consecutiveFailures} consecutive failures, the last: ${outcome.reason}`
      })
    }
  }

  /** The probe was interrupted before its outcome: another attempt may probe at once. */
  probeAborted(): void {
    if (this.state !== "probing") return
    this.state = "open"
    this.nextProbeAt = this.clock.currentTimeMillisUnsafe()
    this.wakeAll()
  }

  private reachable(now: number): void {
    this.consecutiveFailures = 0
    if (this.state !== "open" && this.state !== "probing") return
    this.state = "closed"
    this.coolOff = coolOffFirst
    this.emit({ type: "endpoint.recovered", url: this.url, at: now, reason: "a probe succeeded" })
    this.wakeAll()
  }

  /** Nothing goes to the URL any more; its held and future jobs end "endpoint disabled". */
  disable(reason: string): void {
    if (this.state === "disabled") return
    this.state = "disabled"
    this.emit({ type: "endpoint.disabled", url: this.url, at: this.clock.currentTimeMillisUnsafe(), reason })
    this.wakeAll()
  }

  /** Disabled elsewhere (another process, a restart): the state without a new event. */
  markDisabled(): void {
    if (this.state === "disabled") return
    this.state = "disabled"
    this.wakeAll()
  }

  /** Enabled again: a fresh health. */
  enable(): void {
    this.state = "closed"
    this.consecutiveFailures = 0
    this.failingSince = undefined
    this.lastFailure = undefined
    this.lastFailureAt = undefined
    this.coolOff = coolOffFirst
    this.nextProbeAt = 0
    this.wakeAll()
  }

  snapshot(): GuardSnapshot {
    return {
      url: this.url,
      state: this.state,
      consecutiveFailures: this.consecutiveFailures,
      lastSuccessAt: this.lastSuccessAt,
      lastFailureAt: this.lastFailureAt,
      lastFailure: this.lastFailure,
      nextProbeAt: this.state === "open" || this.state === "probing" ? this.nextProbeAt : undefined
    }
  }
}
