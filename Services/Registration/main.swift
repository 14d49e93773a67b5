import Foundation
import Platform
import ServiceKit

// The registration service: tenants and their RP API keys (admin API), and WebAuthn
// credential registration.
let handles: CeremonyHandles
do {
    handles = try CeremonyHandles.fromEnvironment(logger: Logger(label: "signet.registration"))
} catch {
    Logger(label: "signet.registration").critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
await ServiceRuntime.main(service: .registration, migrations: RegistrationMigrations.all) { router, context in
    TenantAdminRoutes(context: context).register(on: &router)
    WebAuthnRegistrationRoutes(context: context, handles: handles).register(on: &router)
}
