import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { inspect } from "node:util"
import type { DebugLog } from "./Debug.js"
import { End } from "./End.js"
import type { OutageEvents } from "./Outage.js"
import { ClientStatus } from "./Status.js"

/** How many status changes a slow `status` subscriber may fall behind before the oldest are discarded. */
const statusBuffer = 64

const isStatus = (item: ClientStatus | End): item is ClientStatus => item !== End

/** Where the outage's changes go: `onStatus`, the `status` subscribers and the `DEBUG=analytics` log. */
export interface StatusHub extends OutageEvents {
  /** The changes from the moment the stream is run, until `end`. */
  readonly changes: Stream.Stream<ClientStatus>
  readonly end: Effect.Effect<void>
}

export const makeStatusHub = (
  onStatus: ((status: ClientStatus) => void) | undefined,
  held: () => number,
  log: DebugLog
): Effect.Effect<StatusHub> =>
  Effect.map(PubSub.sliding<ClientStatus | End>(statusBuffer), (hub) => {
    let ended = false
    const publish = (status: ClientStatus, line: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        let thrown: unknown
        try {
          onStatus?.(status)
        } catch (error) {
          thrown = error ?? "an exception"
        }
        if (!ended) PubSub.publishUnsafe(hub, status)
        return Effect.andThen(log(line), thrown === undefined ? Effect.void : log(`onStatus threw: ${inspect(thrown)}`))
      })

    return {
      started: (error, since) =>
        publish(
          ClientStatus.Unreachable({ error, since }),
          `server unreachable (${error.message}): holding ${held()} messages, probing with the oldest batch`
        ),
      ended: (downtimeMillis) => {
        const waiting = held()
        return publish(
          ClientStatus.Reachable({ downtimeMillis, held: waiting }),
          `server reachable again after ${downtimeMillis} ms: sending ${waiting} held messages`
        )
      },
      changes: Stream.unwrap(
        Effect.suspend(() =>
          ended
            ? Effect.succeed(Stream.empty)
            : Effect.map(
              PubSub.subscribe(hub),
              (subscription) => Stream.takeWhile(Stream.fromSubscription(subscription), isStatus)
            )
        )
      ),
      end: Effect.suspend(() => {
        ended = true
        return Effect.asVoid(PubSub.publish(hub, End))
      })
    }
  })
