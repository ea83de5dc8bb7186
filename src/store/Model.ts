/** The records the store's services take and give (`Records`, `EndpointRecords`). */
export * from "./EndpointRecords.js"
export * from "./Records.js"
