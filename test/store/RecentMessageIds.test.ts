import { assert, describe, it } from "@effect/vitest"
import { RecentMessageIds } from "../../src/store/sqlite/RecentMessageIds.js"

describe("RecentMessageIds (the SQLite thread's memory of ids not yet merged)", () => {
  it("counts staged ids as seen, keeps them on commit, takes them back on rollback", () => {
    const recent = new RecentMessageIds()
    recent.stage("web", "a", 10)
    const mark = recent.mark()
    recent.stage("web", "b", 10)
    assert.strictEqual(recent.lastSeen("web", "b"), 10, "seen by the requests after it in the group")
    recent.rollbackTo(mark)
    assert.isUndefined(recent.lastSeen("web", "b"))
    assert.strictEqual(recent.lastSeen("web", "a"), 10)
    recent.commit()
    assert.strictEqual(recent.lastSeen("web", "a"), 10)
    assert.isUndefined(recent.lastSeen("app", "a"), "ids are per source")
    recent.rollbackTo(0)
    assert.strictEqual(recent.lastSeen("web", "a"), 10, "committed ids stay")
    assert.strictEqual(recent.size, 1)
  })

  it("forgets a merged id unless it was seen again since its merged row", () => {
    const recent = new RecentMessageIds()
    recent.stage("web", "a", 10)
    recent.stage("web", "b", 10)
    recent.commit()
    recent.stage("web", "b", 99)
    recent.commit()
    recent.forget("web", "a", 10)
    recent.forget("web", "b", 10)
    assert.isUndefined(recent.lastSeen("web", "a"))
    assert.strictEqual(recent.lastSeen("web", "b"), 99)
    recent.forget("web", "b", 99)
    assert.strictEqual(recent.size, 0, "nothing kept once everything is merged")
  })
})
