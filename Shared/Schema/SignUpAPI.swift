import FoundationEssentials

// Wire types of sign-up: the RP opens a sign-up (authentication service), optionally with the
// user's profile and optionally without a username (a passkey-only account); the registration
// service keeps the account and the vault keeps the profile.

/// `POST /v1/tenants/{tenant}/signups` body (RP API key).
public struct SignUpStartRequest: Codable, Sendable, Equatable {
    /// The new user's username; absent for a passkey-only account, whose opaque username the
    /// server assigns.
    public var username: String?
    /// Personal data to keep for the user: into the pii vault, never in plaintext elsewhere.
    public var profile: SignUpProfile?

    public init(username: String? = nil, profile: SignUpProfile? = nil) {
        self.username = username
        self.profile = profile
    }

    public static var fullExample: SignUpStartRequest {
        SignUpStartRequest(username: "user-4711", profile: .fullExample)
    }
}

/// A user's profile given at sign-up. Every member is optional; each is checked
/// (``SignUpProfileRules``) and stored in the pii vault.
public struct SignUpProfile: Codable, Sendable, Equatable {
    /// The user's full name: 1–200 characters, no control characters, not only spaces.
    public var fullName: String?
    /// An e-mail address (``PIIRules/isValidEmail(_:)``).
    public var email: String?
    /// An E.164 phone number (``PIIRules/isValidPhone(_:)``).
    public var phone: String?

    public init(fullName: String? = nil, email: String? = nil, phone: String? = nil) {
        self.fullName = fullName
        self.email = email
        self.phone = phone
    }

    /// Whether no member is given.
    public var isEmpty: Bool { fullName == nil && email == nil && phone == nil }

    /// The members given, as the vault's kinds (`name`, `email`, `phone`) and values.
    public var vaultValues: [(kind: String, value: String)] {
        var values: [(kind: String, value: String)] = []
        if let fullName { values.append(("name", fullName)) }
        if let email { values.append(("email", email)) }
        if let phone { values.append(("phone", phone)) }
        return values
    }

    public static var fullExample: SignUpProfile {
        SignUpProfile(fullName: "Ada Lovelace", email: "ada@example.org", phone: "+447700900123")
    }

    /// A member of a profile, as a refusal names it.
    public enum Member: String, Sendable, CaseIterable {
        case fullName, email, phone
    }

    /// A profile member that the rules refuse: which one, its field (`profile.<member>`) and a
    /// fixed detail (never the value).
    public struct Refusal: Sendable, Equatable {
        public let member: Member
        public let detail: String
        public var field: String { "profile.\(member.rawValue)" }
    }

    /// The first given member, in the order fullName, email, phone, that
    /// ``SignUpProfileRules/isValidFullName(_:)``, ``PIIRules/isValidEmail(_:)`` or
    /// ``PIIRules/isValidPhone(_:)`` refuses; nil when every given member passes. The one check
    /// of a profile: the authentication service runs it when a sign-up starts and the
    /// registration service again when it opens the account, each answering 400 with the
    /// member's problem code (`invalid_full_name`, `invalid_email`, `invalid_phone`).
    public var refusal: Refusal? {
        if let fullName, !SignUpProfileRules.isValidFullName(fullName) {
            return Refusal(member: .fullName, detail: "fullName must be 1-200 characters without control characters.")
        }
        if let email, !PIIRules.isValidEmail(email) { return Refusal(member: .email, detail: "Not an e-mail address.") }
        if let phone, !PIIRules.isValidPhone(phone) { return Refusal(member: .phone, detail: "Phone numbers are E.164: + and 7-15 digits.") }
        return nil
    }
}

/// The checks of a sign-up profile's members, shared by the services that take one.
public enum SignUpProfileRules {
    /// The most characters of a full name: 200.
    public static let maximumFullNameLength = 200

    /// 1–200 characters (extended grapheme clusters), no control or format characters
    /// (categories Cc, Cf: no NUL, no bidi overrides), not only white space, at most 800 bytes.
    public static func isValidFullName(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 4 * maximumFullNameLength, s.count <= maximumFullNameLength else { return false }
        guard !s.unicodeScalars.contains(where: { [.control, .format].contains($0.properties.generalCategory) }) else { return false }
        return s.unicodeScalars.contains { !$0.properties.isWhitespace }
    }

    /// `A•••`: the first character only.
    public static func maskName(_ s: String) -> String {
        guard let first = s.first else { return "•••" }
        return "\(first)•••"
    }
}

/// `POST /v1/tenants/{tenant}/signups` response (201).
public struct SignUpStarted: Codable, Sendable, Equatable {
    /// A registration-only token (30 minutes, `aud` `<tenant>/registration`) that registers
    /// methods for the new user and nothing else.
    public var signUpToken: String
    public var expiresAt: Date
    /// The user's username: the one given, or the opaque one assigned to a passkey-only account.
    public var username: String
    /// The user handle (base64url, the WebAuthn `user.id`) assigned when the sign-up created
    /// the account (a passkey-only account, or a profile given); absent otherwise (the first
    /// registration assigns it).
    public var userHandle: String?
    /// True for a passkey-only account: it registers passkeys (discoverable credentials) only,
    /// and signs in without a username.
    public var passkeyOnly: Bool

    public init(signUpToken: String, expiresAt: Date, username: String, userHandle: String? = nil, passkeyOnly: Bool = false) {
        self.signUpToken = signUpToken
        self.expiresAt = expiresAt
        self.username = username
        self.userHandle = userHandle
        self.passkeyOnly = passkeyOnly
    }

    public static var fullExample: SignUpStarted {
        SignUpStarted(
            signUpToken: "eyJhbGciOiJFUzI1NiJ9.e30.c2lnbnVw", expiresAt: Date(timeIntervalSince1970: 1_764_001_800),
            username: "u_9f86d081884c7d659a2feaa0c55ad015", userHandle: "3q2-7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", passkeyOnly: true)
    }
}

/// `POST /v1/internal/tenants/{tenant}/sign-ups` (registration service, internal token): the
/// account a sign-up opens, created before its first method.
/// Whether a sign-up registered on its account (`POST /v1/internal/tenants/{tenant}/sign-ups/claims`,
/// internal token, the authentication service before `signups/finish`): the account holds
/// something and its first registration was made under the sign-up token `jti`.
public struct SignUpClaimQuery: Codable, Sendable, Equatable {
    public var username: String
    public var jti: String
    public init(username: String, jti: String) {
        self.username = username
        self.jti = jti
    }
}

/// The answer to ``SignUpClaimQuery``.
public struct SignUpClaimAnswer: Codable, Sendable, Equatable {
    /// The account holds something registered under this sign-up (and nothing registered
    /// before it).
    public var registered: Bool
    public init(registered: Bool) { self.registered = registered }
}

public struct SignUpAccountRequest: Codable, Sendable, Equatable {
    public var username: String
    /// The account registers passkeys only.
    public var passkeyOnly: Bool
    public var profile: SignUpProfile?

    public init(username: String, passkeyOnly: Bool, profile: SignUpProfile? = nil) {
        self.username = username
        self.passkeyOnly = passkeyOnly
        self.profile = profile
    }
}

/// The account a sign-up opened: its user handle, base64url.
public struct SignUpAccount: Codable, Sendable, Equatable {
    public var userHandle: String
    public init(userHandle: String) { self.userHandle = userHandle }
}
