import { Layer } from "effect"
import { PgRepositoriesLive } from "../src/runtime.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { deliveryContract, describePostgres, sharedLayer, storageContracts } from "./support.js"

describePostgres("on PostgreSQL", () => {
  const ports = sharedLayer(PgRepositoriesLive.pipe(Layer.provideMerge(PostgresTestDatabase())))
  storageContracts("PostgreSQL", ports)
  deliveryContract("PostgreSQL", ports)
})
