import Foundation
import Platform
import ServiceKit

// The authentication service: WebAuthn sign-in over its own read model of credentials, and
// session tokens.
let logger = Logger(label: "signet.authentication")
let handles: CeremonyHandles
let sessions: SessionIssuer
do {
    handles = try CeremonyHandles.fromEnvironment(logger: logger)
    sessions = try SessionIssuer.fromEnvironment()
} catch {
    logger.critical("configuration error", metadata: [LogKey.error: "\(error)"])
    exit(78)
}
await ServiceRuntime.main(service: .authentication, migrations: AuthenticationMigrations.all, handlers: CredentialReadModel.handlers) {
    router, context in
    let ceremony = AssertionCeremony(context: context)
    WebAuthnAuthenticationRoutes(context: context, handles: handles, sessions: sessions, ceremony: ceremony).register(on: &router)
}
