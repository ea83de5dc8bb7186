// A setup file: before each test file, `it.effect`, `it.scoped` and the rest are @effect/vitest's own again.
// Its `layer(...)` assigns its runtime's versions onto the one shared `it` object; with test files sharing a worker's
// modules (`isolate: false`), a file using `layer` would otherwise give every later file its runtime (and no TestClock).
import { it, makeMethods } from "@effect/vitest"

makeMethods(it)
