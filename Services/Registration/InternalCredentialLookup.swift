import Crypto
import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit

/// Another service asks whether a user has a credential (QR registration, #17: before a
/// `register` QR session SUCCEEDED, the oob service checks that the credential the phone names
/// is the session user's and was registered after the code was shown):
/// `GET /v1/internal/tenants/{tenant}/users/{username}/credentials/{credentialId}` (internal
/// guard) answers the credential as the user's list shows it, or 404 `not_found` when the user
/// has no such credential.
struct InternalCredentialLookup: Sendable {
    let credentials: CredentialStore
    let calls: InternalCalls

    func register(on router: inout GuardedRouter) {
        router.get("/v1/internal/tenants/{tenant}/users/{username}/credentials/{credentialId}", calls.guardInternal) { _, ctx in
            let id = try WebAuthnRegistrationRoutes.credentialID(ctx)
            guard let credential = try await credentials.credential(tenant: ctx.parameter("tenant"), username: try ctx.username(), id: Base64URL.encode(id))
            else { throw HTTPError(.notFound, detail: "The user has no such credential.") }
            return try .json(credential, headers: [("Cache-Control", "no-store")])
        }
    }
}
