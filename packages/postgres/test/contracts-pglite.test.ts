import { Layer } from "effect"
import { layerPglite } from "../src/pglite-client.js"
import { migrated, PgRepositoriesLive } from "../src/runtime.js"
import { deliveryContract, sharedLayer, storageContracts } from "./support.js"

const ports = sharedLayer(PgRepositoriesLive.pipe(Layer.provideMerge(migrated(layerPglite({})))))
storageContracts("PGlite", ports)
deliveryContract("PGlite", ports)
