import { Effect } from "effect"
import type { Fiber } from "effect"
import { type EndpointKey, endpointKeyString } from "../../domain/EndpointKey.js"
import type { WebhookSettings } from "../../domain/Settings.js"
import { FifoGate } from "../../runtime/FifoGate.js"
import type { EndpointGate, EndpointGateFor } from "../Deliver.js"
import type { EndpointState } from "../DeliveryResult.js"
import type { EndpointGuardsShape } from "../EndpointGuards.js"
import type { Transport } from "../Transport.js"
import type { Held, Leases } from "./Leases.js"
import type { Settings } from "./Options.js"

/** A job to deliver: from a claim, or back from a retry wait with its progress. */
export interface Run {
  readonly held: Held
  readonly settings: WebhookSettings
  /** The job's first attempt, once made in this process (a retry waiting in memory); else the stored one. */
  readonly firstAttemptAt: number | undefined
  /** Each URL's progress from earlier runs (the store's `endpoint_state`); empty for a job never attempted. */
  readonly states: ReadonlyArray<EndpointState>
}

/**
 * One endpoint (source, destination, URL: REFERENCE §7b): its mailbox, its workers (at most `concurrencyPerEndpoint`) and the gate its attempts pass (the
 * concurrency limit and the URL's guard: circuit, rate limit, health).
 */
interface Actor {
  readonly gate: EndpointGate
  readonly mailbox: Array<Run>
  head: number
  workers: number
  /** Workers forked that have not taken their first job yet: the queued jobs they will take need no other worker. */
  starting: number
}

export interface ActorsConfig {
  readonly settings: Settings
  readonly leases: Leases
  readonly guards: EndpointGuardsShape
  /** Starts a fiber in the dispatcher's scope, interruptible. */
  readonly fork: (effect: Effect.Effect<void, never, Transport>) => Fiber.Fiber<void, never>
  /** Delivers one job and concludes it (`JobRuns`); called when the job starts. */
  readonly runJob: (run: Run) => Effect.Effect<void>
}

/** The actor of an endpoint not seen before: an empty mailbox, no worker, and its gate. */
const newActor = (key: EndpointKey, settings: Settings, guards: EndpointGuardsShape): Actor => ({
  gate: { permits: new FifoGate(settings.concurrencyPerEndpoint), guard: guards.guardFor(key) },
  mailbox: [],
  head: 0,
  workers: 0,
  starting: 0
})

/** The mailbox's next job, or undefined when it is empty. Lost jobs are dropped (their leases released). */
const take = (actor: Actor, leases: Leases): Run | undefined => {
  while (actor.head < actor.mailbox.length) {
    const run = actor.mailbox[actor.head]!
    actor.mailbox[actor.head++] = undefined as never
    if (actor.head === actor.mailbox.length) {
      actor.mailbox.length = 0
      actor.head = 0
    } else if (actor.head > 1024 && actor.head * 2 > actor.mailbox.length) {
      actor.mailbox.splice(0, actor.head)
      actor.head = 0
    }
    if (!run.held.lost) return run
    leases.release(run.held)
  }
  return undefined
}

/**
 * Drops from the actor's mailbox, newest first, up to `excess` jobs of the source that no attempt has touched yet:
 * their leases released and their ids added to `shed`. Returns how many it dropped.
 */
const dropUntouched = (
  actor: Actor,
  sourceId: string,
  excess: number,
  leases: Leases,
  shed: Array<string>
): number => {
  let dropped = 0
  for (let i = actor.mailbox.length - 1; i >= actor.head && dropped < excess; i--) {
    const run = actor.mailbox[i]!
    if (run.held.job.sourceId !== sourceId || run.states.length !== 0 || run.held.lost) continue
    shed.push(run.held.job.id)
    leases.release(run.held)
    actor.mailbox[i] = undefined as never
    dropped++
  }
  if (dropped === 0) return 0
  const kept = actor.mailbox.slice(actor.head).filter((run) => run !== undefined)
  actor.mailbox.length = 0
  actor.head = 0
  for (const run of kept) actor.mailbox.push(run)
  return dropped
}

/**
 * The endpoint actors: each endpoint (a URL of one destination of one source) has a mailbox of single-URL jobs, up to `concurrencyPerEndpoint` worker fibers
 * that take its jobs in turn, and a FIFO gate of as many permits. Workers live as long as their mailbox has work, so a
 * job costs no fiber of its own. Every attempt passes its URL's gate (`gate`), so the mailbox's jobs and the attempts
 * of jobs with several URLs share the endpoint's limit. A slow or failing endpoint holds its own workers only.
 */
export const makeActors = (config: ActorsConfig) => {
  const { leases, settings } = config
  const { mailboxes } = leases
  const actors = new Map<string, Actor>()
  let stopping = false

  const actorFor = (key: EndpointKey): Actor => {
    const id = endpointKeyString(key)
    let actor = actors.get(id)
    if (actor === undefined) {
      actor = newActor(key, settings, config.guards)
      actors.set(id, actor)
    }
    return actor
  }

  /** The concurrency limit and guard of each URL of a job's destination, around each attempt on it. */
  const gateOf = (job: { readonly sourceId: string; readonly destinationId: string }): EndpointGateFor => (url) =>
    actorFor({ sourceId: job.sourceId, destinationId: job.destinationId, url }).gate

  /**
   * The source's mailbox shrank (`SourceMailboxes`): the jobs it holds beyond its bound that no attempt has touched
   * yet, newest first, go back to the store.
   */
  const shed = (sourceId: string): void => {
    let excess = mailboxes.count(sourceId) - mailboxes.bound(sourceId)
    if (excess <= 0) return
    const shed: Array<string> = []
    for (const actor of actors.values()) {
      if (excess <= 0) break
      excess -= dropUntouched(actor, sourceId, excess, leases, shed)
    }
    if (shed.length > 0) config.fork(leases.giveBack(shed, "jobs beyond a shrunk mailbox"))
  }

  /**
   * One of the endpoint's workers: takes the mailbox's jobs one after another and delivers each, while there are any
   * (none once the dispatcher stops). A job's `fiber` is its worker while it runs there: the lease renewer interrupts
   * it if the job is taken over, and a worker that stops early leaves its place to a new one.
   */
  const worker = (actor: Actor): Effect.Effect<void, never, Transport> =>
    Effect.withFiber((fiber) => {
      actor.starting -= 1
      const next: Effect.Effect<void, never, Transport> = Effect.suspend(() => {
        const run = stopping ? undefined : take(actor, leases)
        if (run === undefined) return Effect.void
        run.held.fiber = fiber
        return Effect.andThen(config.runJob(run), next)
      })
      return next
    })

  const startWorkers = (actor: Actor): void => {
    while (
      !stopping && actor.workers < settings.concurrencyPerEndpoint &&
      actor.mailbox.length - actor.head > actor.starting
    ) {
      actor.workers += 1
      actor.starting += 1
      config.fork(Effect.ensuring(
        worker(actor),
        Effect.sync(() => {
          actor.workers -= 1
          startWorkers(actor)
        })
      ))
    }
  }

  const post = (run: Run): void => {
    const { destinationId, sourceId } = run.held.job
    const actor = actorFor({ sourceId, destinationId, url: run.settings.endpoints[0]!.url })
    actor.mailbox.push(run)
    startWorkers(actor)
  }

  /** Shutdown: no job leaves a mailbox any more; the workers are interrupted by the caller. */
  const stop = (): void => {
    stopping = true
  }

  return {
    post,
    shed,
    gateOf,
    stop,
    get stopping() {
      return stopping
    }
  }
}

export type Actors = ReturnType<typeof makeActors>
