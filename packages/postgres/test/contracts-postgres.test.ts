import { Layer } from "effect"
import { PgRepositoriesLive } from "../src/runtime.js"
import { PostgresTestDatabase } from "../src/test-database.js"
import { describePostgres, sharedLayer, storageContracts } from "./support.js"

describePostgres("on PostgreSQL", () => {
  storageContracts("PostgreSQL", sharedLayer(PgRepositoriesLive.pipe(Layer.provide(PostgresTestDatabase()))))
})
