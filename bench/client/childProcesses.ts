import type { ChildProcess } from "node:child_process"

/** The next IPC message of `type` from `child`; rejects if the child exits first. */
export const nextMessage = <T>(child: ChildProcess, type: string): Promise<T> =>
  new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return
      child.off("message", onMessage)
      child.off("exit", onExit)
      resolve(message as T)
    }
    const onExit = (code: number | null) => reject(new Error(`child exited with ${code} before "${type}"`))
    child.on("message", onMessage)
    child.once("exit", onExit)
  })

/** The `track` call both client benchmarks send: an order of a thousand users. */
export const trackParams = (i: number, messageId?: string) => ({
  userId: `user-${i % 1000}`,
  event: "Order Completed",
  ...(messageId !== undefined && { messageId }),
  properties: {
    orderId: `order-${i}`,
    revenue: 12.5,
    currency: "EUR",
    items: 3,
    coupon: i % 7 === 0 ? "SPRING" : null
  },
  context: { ip: "203.0.113.7", userAgent: "bench/1.0" }
})
