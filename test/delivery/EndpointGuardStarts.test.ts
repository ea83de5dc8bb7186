import { describe, expect, it } from "@effect/vitest"
import { StoreClock } from "../../src/delivery/EndpointGuardStarts.js"

/**
 * The store's clock placed on the process's (`StoreClock`): start instants reserved on the store's clock become times
 * on this one by the quickest recent answer, so a slow answer does not move them.
 */

// The store's clock runs this far ahead of the process's.
const ahead = 5_000

describe("StoreClock", () => {
  it("places instants by the quickest answer; a slow one (a lock waited for, a busy loop) does not move them", () => {
    const clock = new StoreClock()
    // A quick answer: the store read its clock in the middle of a 2 ms round trip.
    expect(clock.local({ first: 1_050 + ahead, now: 1_001 + ahead }, 1_000, 1_002)).toBe(1_050)
    // A slow one: the store read its clock at the end of 200 ms (it waited for the row's lock). Its middle would put
    // the instants 99 ms late; the quicker estimate stands.
    expect(clock.local({ first: 2_250 + ahead, now: 2_199 + ahead }, 2_000, 2_200)).toBe(2_250)
    // A quicker answer replaces the estimate (the clocks drifted by 3 ms meanwhile).
    expect(clock.local({ first: 3_050 + ahead + 3, now: 3_000 + ahead + 3 }, 2_999, 3_001)).toBe(3_050)
  })

  it("an estimate older than 30 s gives way to any answer, so a clock that moved is followed", () => {
    const clock = new StoreClock()
    expect(clock.local({ first: 1_050 + ahead, now: 1_001 + ahead }, 1_000, 1_002)).toBe(1_050)
    // The store's clock stepped 40 ms; the next answers are slower than the first.
    const stepped = ahead + 40
    expect(clock.local({ first: 20_050 + stepped, now: 20_005 + stepped }, 20_000, 20_010)).toBe(20_090)
    expect(clock.local({ first: 40_050 + stepped, now: 40_005 + stepped }, 40_000, 40_010)).toBe(40_050)
    // Then the younger estimate holds against a slower answer.
    expect(clock.local({ first: 41_050 + stepped, now: 41_015 + stepped }, 41_000, 41_020)).toBe(41_050)
  })
})
