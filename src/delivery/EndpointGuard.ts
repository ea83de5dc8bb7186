import { Effect } from "effect"
import type { Clock } from "effect"
import type { Endpoint } from "../domain/Settings.js"
import { coolOffFirst, coolOffMax, type ReservedStarts, type SharedCircuit } from "../store/EndpointShare.js"
import type { StoreError } from "../store/StoreError.js"
import type { AttemptOutcome } from "./AttemptOutcome.js"
import { SharedStarts } from "./EndpointGuardStarts.js"

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
  /** Why this process disabled the URL, until the store's record of it can be read. */
  readonly disabledReason: string | undefined
}

export const defaultFailureThreshold = 10
export const defaultDisableAfterHours = 72
// A claim of the shared probe that could not reach the store is tried again after this.
const claimRetryMillis = 1_000
const claimPauseMillis = 100

/**
 * How the guard of a deployment's process reaches the circuit and rate limit its endpoint shares with the other
 * processes (`EndpointGuards` builds it over `EndpointShare`). The reports run in the background: the circuit that
 * results comes back through `follow`, and so does every change another process makes.
 */
export interface GuardLink {
  /** A counted failure; `probe`: it was this process's probe. */
  readonly failed: (probe: boolean, reason: string) => void
  /** The endpoint answered after failures: its circuit goes, for every process. */
  readonly succeeded: () => void
  readonly probeAborted: () => void
  readonly claimProbe: () => Effect.Effect<
    { readonly won: boolean; readonly circuit: SharedCircuit | undefined },
    StoreError
  >
  readonly reserveStarts: (intervalMillis: number, count: number) => Effect.Effect<ReservedStarts, StoreError>
}

/**
 * One URL's circuit breaker, token bucket and health counters, on the Clock. Attempts ask `tryPass` (synchronous, no
 * allocation: the closed circuit's path) or wait in `pass`; every outcome is `report`ed. After `failureThreshold`
 * consecutive retryable failures the circuit opens: attempts are held (they are not attempted and not recorded) until
 * one probe, after a cool-off doubling from 5 s to 5 min, succeeds. Held attempts sleep on timers and a wake-up list:
 * a failing endpoint costs nothing per held job.
 *
 * With a `link` (a deployment of several processes) the circuit and the rate limit are the deployment's: failures
 * are counted, the circuit opened and closed, and the probe taken in the store (`EndpointShare`), whose circuit this
 * guard `follow`s; start instants come from the shared limit (`SharedStarts`). Only a failing or rate-limited
 * endpoint costs queries: the closed circuit's path stays synchronous and free.
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
  private disabledReason: string | undefined
  private coolOff = coolOffFirst
  private wakers: Array<() => void> = []
  /** Milliseconds between two attempts (0: no rate limit), and when the next one may start. */
  private interval = 0
  private nextFreeAt = 0
  private threshold = defaultFailureThreshold
  private disableAfterMillis = defaultDisableAfterHours * 3_600_000
  /** Shared mode: this process holds (or is claiming) the deployment's probe. */
  private probeHeld = false
  /** Shared mode: when the shared circuit last seen was read; an older reading is not followed. */
  private followedAsOf = 0
  private readonly starts: SharedStarts | undefined

  constructor(
    readonly url: string,
    private readonly clock: Clock.Clock,
    private readonly emit: (event: GuardEvent) => void,
    private readonly link?: GuardLink
  ) {
    this.starts = link === undefined ? undefined : new SharedStarts(clock, link.reserveStarts)
  }

  /** Consecutive failures that open the circuit. */
  get failureThreshold(): number {
    return this.threshold
  }

  /** The endpoint's settings (circuit and rate limit); called when settings are read, not per attempt. */
  configure(endpoint: Endpoint): void {
    this.threshold = endpoint.circuit?.failureThreshold ?? defaultFailureThreshold
    this.disableAfterMillis = (endpoint.circuit?.disableAfterHours ?? defaultDisableAfterHours) * 3_600_000
    this.interval = endpoint.rateLimit === undefined ? 0 : 1000 / endpoint.rateLimit.perSecond
    this.starts?.reset(this.interval)
  }

  /** The attempt may go now (closed circuit, a token free): taken. */
  tryPass(): boolean {
    if (this.state !== "closed") return false
    if (this.interval === 0) return true
    if (this.starts !== undefined) return this.starts.tryTake()
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
        if (this.starts !== undefined) return this.starts.next(lastStart)
        // A reservation: each waiter has its own instant, so a released token wakes nobody else.
        const at = Math.max(now, this.nextFreeAt)
        if (at > lastStart) return Effect.succeed("unavailable")
        this.nextFreeAt = at + this.interval
        return at <= now ? Effect.succeed("go") : Effect.as(Effect.sleep(at - now), "go")
      }
      if (now > lastStart) return Effect.succeed("unavailable")
      if (this.state === "open" && now >= this.nextProbeAt) {
        this.state = "probing"
        if (this.link === undefined) return Effect.succeed("probe")
        this.probeHeld = true
        return this.claim(this.link, step)
      }
      const until = this.state === "open" ? Math.min(this.nextProbeAt, lastStart + 1) : lastStart + 1
      return Effect.andThen(this.wait(until - now), Effect.suspend(step))
    }
    return Effect.suspend(step)
  }

  /** Shared mode: the deployment's probe, if this process takes it; else the shared circuit, followed. */
  private claim(link: GuardLink, step: () => Effect.Effect<Pass>): Effect.Effect<Pass> {
    const claimed = Effect.matchEffect(link.claimProbe(), {
      onFailure: () =>
        Effect.suspend(() => {
          this.unclaim(this.clock.currentTimeMillisUnsafe() + claimRetryMillis)
          return step()
        }),
      onSuccess: ({ circuit, won }) =>
        Effect.suspend(() => {
          const now = this.clock.currentTimeMillisUnsafe()
          if (won && this.state === "probing" && this.probeHeld) {
            this.followedAsOf = now
            return Effect.succeed<Pass>("probe")
          }
          if (won) link.probeAborted()
          this.unclaim(circuit?.nextProbeAt ?? now)
          this.follow(circuit, now)
          // Not before a moment from now: a circuit due again at once (a probe aborted meanwhile) is not asked in a loop.
          if (this.state === "open") this.nextProbeAt = Math.max(this.nextProbeAt, now + claimPauseMillis)
          return step()
        })
    })
    // Interrupted while claiming (its job was taken over, or the process stops): the probe is not this process's.
    return Effect.onInterrupt(claimed, () =>
      Effect.sync(() => {
        if (this.state !== "probing" || !this.probeHeld) return
        link.probeAborted()
        this.unclaim(this.clock.currentTimeMillisUnsafe())
      }))
  }

  /** The claim did not give this process the probe: open again until `nextProbeAt`. */
  private unclaim(nextProbeAt: number): void {
    if (!this.probeHeld) return
    this.probeHeld = false
    if (this.state !== "probing") return
    this.state = "open"
    this.nextProbeAt = nextProbeAt
    this.wakeAll()
  }

  /**
   * Shared mode: the deployment's circuit (undefined: healthy) as read at `asOf`, unless this process read it more
   * recently or runs the probe itself: a circuit opened elsewhere holds this process's attempts, one closed elsewhere
   * lets them go.
   */
  follow(circuit: SharedCircuit | undefined, asOf: number): void {
    if (this.state === "disabled" || asOf < this.followedAsOf) return
    if (this.state === "probing" && this.probeHeld) return
    this.followedAsOf = asOf
    this.consecutiveFailures = circuit?.failures ?? 0
    if (circuit === undefined || circuit.state === "closed") {
      if (this.state === "closed") return
      this.state = "closed"
      this.coolOff = coolOffFirst
      return this.wakeAll()
    }
    if (this.state === "open" && this.nextProbeAt === circuit.nextProbeAt) return
    this.state = "open"
    this.nextProbeAt = circuit.nextProbeAt
    this.wakeAll()
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
    if (this.link !== undefined) return this.sharedFailure(this.link, now, probe, outcome.reason)
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

  /** Shared mode: the failure is counted in the store; the circuit opens when the store says so (`follow`). */
  private sharedFailure(link: GuardLink, now: number, probe: boolean, reason: string): void {
    this.consecutiveFailures += 1
    const mine = probe && this.state === "probing" && this.probeHeld
    link.failed(mine, reason)
    if (!mine) return
    // The store doubles the cool-off too; until its answer, this process holds its attempts for as long.
    this.probeHeld = false
    this.coolOff = Math.min(this.coolOff * 2, coolOffMax)
    this.state = "open"
    this.nextProbeAt = now + this.coolOff
    this.followedAsOf = now
    this.wakeAll()
  }

  /** The probe was interrupted before its outcome: another attempt may probe at once. */
  probeAborted(): void {
    if (this.link !== undefined && this.probeHeld) {
      this.probeHeld = false
      this.link.probeAborted()
    }
    if (this.state !== "probing") return
    this.state = "open"
    this.nextProbeAt = this.clock.currentTimeMillisUnsafe()
    this.wakeAll()
  }

  private reachable(now: number): void {
    if (this.link !== undefined) return this.sharedReachable(this.link, now)
    this.consecutiveFailures = 0
    if (this.state !== "open" && this.state !== "probing") return
    this.state = "closed"
    this.coolOff = coolOffFirst
    this.emit({ type: "endpoint.recovered", url: this.url, at: now, reason: "a probe succeeded" })
    this.wakeAll()
  }

  /** Shared mode: the store closes the circuit for every process; the one that closed it tells (`EndpointGuards`). */
  private sharedReachable(link: GuardLink, now: number): void {
    const failing = this.consecutiveFailures > 0 || this.state === "open" || this.state === "probing"
    this.consecutiveFailures = 0
    this.probeHeld = false
    this.followedAsOf = now
    if (failing) link.succeeded()
    if (this.state !== "open" && this.state !== "probing") return
    this.state = "closed"
    this.coolOff = coolOffFirst
    this.wakeAll()
  }

  /** Nothing goes to the URL any more; its held and future jobs end "endpoint disabled". */
  disable(reason: string): void {
    if (this.state === "disabled") return
    this.state = "disabled"
    this.disabledReason = reason
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
    this.disabledReason = undefined
    this.consecutiveFailures = 0
    this.failingSince = undefined
    this.lastFailure = undefined
    this.lastFailureAt = undefined
    this.coolOff = coolOffFirst
    this.nextProbeAt = 0
    this.probeHeld = false
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
      nextProbeAt: this.state === "open" || this.state === "probing" ? this.nextProbeAt : undefined,
      disabledReason: this.state === "disabled" ? this.disabledReason : undefined
    }
  }
}
