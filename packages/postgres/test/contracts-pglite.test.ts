import { Layer } from "effect"
import { layerPglite } from "../src/pglite-client.js"
import { migrated, PgRepositoriesLive } from "../src/runtime.js"
import { sharedLayer, storageContracts } from "./support.js"

storageContracts("PGlite", sharedLayer(PgRepositoriesLive.pipe(Layer.provide(migrated(layerPglite({}))))))
