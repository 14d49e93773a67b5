import Crypto
import FoundationEssentials
import HTTPServer
import OTP
import QRCode
import Schema
import ServiceKit

/// Setting up a user's non-FIDO method: `email_otp` and `sms_otp` (the address or number kept
/// by the pii service, a code delivered through the oob-notification service) and `totp` (a
/// secret generated here, shown once as an `otpauth://` URI and QR code); each confirmed by a
/// first code. The rows are ``MethodStore``'s.
struct MethodEnrollment: Sendable {
    let tenants: TenantDirectory
    let users: UserStore
    let methods: MethodStore
    let secrets: MethodSecrets
    let rules: RegistrationRules
    /// The codes setup may send, per user and per destination.
    let budget: MethodSetupBudget
    let subjectKey: SubjectKey
    /// How long a delivered confirmation code is valid.
    static let codeLifetime: TimeInterval = 300

    /// Starts setting up a method of `body.type` for the user (created when new).
    ///
    /// - Returns: the pending method; for TOTP with its URI and QR code (shown once).
    /// - Throws: 400 `invalid_field`; 403 from the registration rules; 404 `tenant_not_found`;
    ///   409 `passkey_only_account` for an account opened by a username-less sign-up; 429
    ///   `code_send_limited` past the setup's send budget (``MethodSetupBudget``).
    func start(_ body: MethodCreateRequest, tenant tenantID: String, username: String) async throws -> MethodResource {
        guard MethodTypes.registrable.contains(body.type) else { throw HTTPError.invalid("type", "type must be email_otp, sms_otp or totp.") }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 { throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.") }
        let locale = body.locale ?? "en"
        guard (2...16).contains(locale.utf8.count), locale.allSatisfy({ $0.isLetter || $0 == "-" }) else { throw HTTPError.invalid("locale", "locale like en or fr-CA.") }
        guard let tenant = try await tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        try await rules.requireOffered(body.type, tenant: tenantID, username: username)
        guard try await !users.isPasskeyOnly(tenant: tenantID, username: username) else {
            throw HTTPError(.passkeyOnlyAccount, detail: "This account was opened for passkeys only; register a passkey.")
        }
        let now = Date()
        let methodID = "m_" + Hex.encode(SecureRandom.bytes(16))
        let userHandle = try await users.ensure(tenant: tenantID, username: username)
        var pending = MethodStore.Pending(
            id: methodID, tenant: tenantID, username: username, type: body.type, friendlyName: body.friendlyName, createdAt: now)
        var resource = MethodResource(methodId: methodID, type: body.type, status: "PENDING_CONFIRMATION", friendlyName: body.friendlyName, createdAt: now)
        switch body.type {
        case "email_otp", "sms_otp":
            let (kind, value) = body.type == "email_otp" ? ("email", body.email) : ("phone", body.phone)
            guard let value else { throw HTTPError.invalid(kind == "email" ? "email" : "phone", "Give the \(kind == "email" ? "e-mail address" : "phone number").") }
            if kind == "email", !PIIRules.isValidEmail(value) { throw HTTPError.invalid("email", "Not an e-mail address.") }
            if kind == "phone", !PIIRules.isValidPhone(value) { throw HTTPError.invalid("phone", "Phone numbers are E.164: + and 7-15 digits.") }
            // Before anything is stored or sent: each setup is a new method, which no sign-in
            // budget counts.
            try await budget.spend(
                tenant: tenantID, subjectRef: subjectKey.ref(tenant: tenantID, username: username),
                destination: budget.destination(tenant: tenantID, kind: kind, value: value), now: now)
            // The vault keeps the value; this service keeps its reference and masked form. A
            // store whose answer is lost is withdrawn by the method's removal event (durable).
            let stored = try await secrets.calls.storeInVault(
                secrets.piiURL, tenant: tenantID, subject: Base64URL.encode(userHandle), kind: kind, value: value
            ) { ref in
                await methods.withdraw(piiRef: ref, methodID: methodID, type: body.type, tenant: tenantID, username: username, at: now)
            }
            let code = try OneTimeCode.generate(digits: 6)
            pending.piiRef = stored.ref
            pending.masked = stored.masked
            pending.codeHash = try OneTimeCode.storageHash(of: code, key: secrets.codeHashKey, context: Array(methodID.utf8))
            pending.codeExpiresAt = now.addingTimeInterval(Self.codeLifetime)
            let delivery = try DeliveryRequested.sealing(
                code: code, with: secrets.delivery, tenant: tenantID, channel: kind == "email" ? "email" : "sms", piiRef: stored.ref, locale: locale,
                lifetime: Self.codeLifetime, now: now)
            do {
                try await methods.insert(pending, delivery: delivery)
            } catch {
                // Nothing refers to the stored value: withdraw it from the vault (no code was
                // sent: the delivery request commits with the method), then report the setup's
                // own failure.
                await methods.withdraw(piiRef: stored.ref, methodID: methodID, type: body.type, tenant: tenantID, username: username, at: now)
                throw error
            }
            resource.masked = stored.masked
        default:
            let secret = OTPSecret()
            pending.sealedSecret = try secrets.methodSecrets.seal(secret.bytes, associatedData: Self.secretBinding(tenant: tenantID, method: methodID))
            let uri = try OTPAuthURI(totp: try TOTP(secret: secret), issuer: tenant.displayName, account: username)
            try await methods.insert(pending, delivery: nil)
            resource.otpauthUri = uri.absoluteString
            resource.qrCodePng = Data(try QRCode.encode(uri.absoluteString).pngData()).base64EncodedString()
        }
        return resource
    }

    /// Confirms the user's pending method with its first code.
    ///
    /// - Throws: 400 `code_mismatch`, `code_expired`, `too_many_attempts`; 404 `not_found`;
    ///   409 `method_already_confirmed`.
    func confirm(methodID: String, code: String, tenant tenantID: String, username: String) async throws -> MethodResource {
        let now = Date()
        let secrets = secrets
        let confirmed = try await methods.confirm(id: methodID, tenant: tenantID, username: username, at: now) { pending in
            if pending.type == "totp" {
                guard let sealed = pending.sealedSecret,
                    let secretBytes = try? secrets.methodSecrets.open(sealed, associatedData: Self.secretBinding(tenant: tenantID, method: methodID))
                else { throw HTTPError(.internalError) }
                guard let step = try? TOTP(secret: try OTPSecret(bytes: secretBytes)).verify(code, at: now) else { return .refused }
                return .accepted(lastTotpStep: Int(step))
            }
            guard let hash = pending.codeHash, let expires = pending.codeExpiresAt else { throw HTTPError(.internalError) }
            guard expires > now else { throw HTTPError(.confirmationCodeExpired, detail: "The code expired; set the method up again.") }
            let matches = OneTimeCode.matches(
                code, digits: 6, storedHash: hash, keys: [secrets.codeHashKey] + secrets.acceptedCodeHashKeys, context: Array(methodID.utf8))
            return matches ? .accepted(lastTotpStep: nil) : .refused
        }
        guard let confirmed else { throw HTTPError(.confirmationCodeMismatch, detail: "The code is not right.") }
        return confirmed
    }

    /// What a TOTP secret is sealed to: its tenant and method.
    static func secretBinding(tenant: String, method: String) -> [UInt8] { Array("\(tenant)/\(method)".utf8) }
}
