import { describe, expect, it } from "@effect/vitest"
import { SourceMailboxes } from "../../src/delivery/SourceMailboxes.js"

const fill = (mailboxes: SourceMailboxes, sourceId: string, count: number) => {
  let added = 0
  while (added < count && mailboxes.tryAdd(sourceId)) added++
  return added
}

describe("SourceMailboxes", () => {
  it("holds a new source to the base bound", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    expect(fill(mailboxes, "s1", 100)).toBe(8)
    expect(mailboxes.tryAdd("s1")).toBe(false)
    expect(mailboxes.count("s1")).toBe(8)
    expect(mailboxes.bound("s1")).toBe(8)
  })

  it("grows a source's bound after base quick deliveries in a row, and says so once", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    const grew = Array.from({ length: 12 }, () => mailboxes.deliveredQuickly("s1"))
    expect(grew.indexOf(true)).toBe(7)
    expect(grew.filter(Boolean)).toHaveLength(1)
    expect(mailboxes.bound("s1")).toBe(32)
    expect(fill(mailboxes, "s1", 100)).toBe(32)
    // Another source keeps its own bound.
    expect(mailboxes.bound("s2")).toBe(8)
  })

  it("puts a source back to the base bound at the first job that was not quick, and the streak starts over", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    // Not grown yet: nothing shrinks.
    expect(mailboxes.notQuick("s1")).toBe(false)
    for (let i = 0; i < 8; i++) mailboxes.deliveredQuickly("s1")
    expect(mailboxes.notQuick("s1")).toBe(true)
    expect(mailboxes.notQuick("s1")).toBe(false)
    expect(mailboxes.bound("s1")).toBe(8)
    for (let i = 0; i < 7; i++) mailboxes.deliveredQuickly("s1")
    expect(mailboxes.bound("s1")).toBe(8)
    mailboxes.notQuick("s1")
    for (let i = 0; i < 7; i++) mailboxes.deliveredQuickly("s1")
    expect(mailboxes.bound("s1")).toBe(8)
    expect(mailboxes.deliveredQuickly("s1")).toBe(true)
    expect(mailboxes.bound("s1")).toBe(32)
  })

  it("a source's jobs above its bound after it shrank are let go one by one, and none is added meanwhile", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    for (let i = 0; i < 8; i++) mailboxes.deliveredQuickly("s1")
    expect(fill(mailboxes, "s1", 20)).toBe(20)
    mailboxes.notQuick("s1")
    expect(mailboxes.tryAdd("s1")).toBe(false)
    const halfEmpty = Array.from({ length: 20 }, () => mailboxes.remove("s1"))
    // Down to half of the bound it has now (8): 4 left after the 16th removal.
    expect(halfEmpty.indexOf(true)).toBe(15)
    expect(halfEmpty.filter(Boolean)).toHaveLength(1)
    expect(mailboxes.count("s1")).toBe(0)
    expect(mailboxes.tryAdd("s1")).toBe(true)
  })

  it("rings at half of the grown bound", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    for (let i = 0; i < 8; i++) mailboxes.deliveredQuickly("s1")
    fill(mailboxes, "s1", 32)
    const halfEmpty = Array.from({ length: 32 }, () => mailboxes.remove("s1"))
    expect(halfEmpty.indexOf(true)).toBe(15)
  })

  it("shapes a claim: sources past half their bound left out, the others' least room as its size", () => {
    const mailboxes = new SourceMailboxes(8, 32)
    // Nothing held: a claim may bring a new source's base bound.
    expect(mailboxes.claimShape()).toStrictEqual({ saturated: [], room: 8 })
    fill(mailboxes, "full", 5)
    for (let i = 0; i < 8; i++) mailboxes.deliveredQuickly("quick")
    fill(mailboxes, "quick", 10)
    fill(mailboxes, "low", 2)
    // "full" holds 5 of 8 (past half); "quick" 10 of 32 (room 22); "low" 2 of 8 (room 6).
    expect(mailboxes.claimShape()).toStrictEqual({ saturated: ["full"], room: 6 })
    while (mailboxes.count("low") > 0) mailboxes.remove("low")
    expect(mailboxes.claimShape()).toStrictEqual({ saturated: ["full"], room: 22 })
    while (mailboxes.count("quick") > 0) mailboxes.remove("quick")
    // Only saturated sources held: what the claim brings is other sources', at most a base bound of them.
    expect(mailboxes.claimShape()).toStrictEqual({ saturated: ["full"], room: 8 })
  })

  it("a quick bound no larger than the base changes nothing", () => {
    const mailboxes = new SourceMailboxes(8, 8)
    const grew = Array.from({ length: 8 }, () => mailboxes.deliveredQuickly("s1"))
    expect(grew.some(Boolean)).toBe(false)
    expect(fill(mailboxes, "s1", 100)).toBe(8)
  })
})
