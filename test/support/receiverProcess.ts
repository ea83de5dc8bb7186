import { startReceiver } from "./replicas.js"

/** The child of `startReceiverProcess`: a receiver that sends its URL, then each delivery as it arrives, to its parent. */
const send = (message: unknown) => process.send!(message)
const receiver = await startReceiver(0, () => 200, send)
send({ url: receiver.url })
process.on("disconnect", () => void receiver.close().then(() => process.exit(0)))
