import Testing
@testable import OTP

/// An issuer and account pair with characters that need percent-encoding.
struct LabelCase: Sendable, CustomTestStringConvertible {
    let issuer: String
    let account: String
    let encodedIssuer: String
    let encodedAccount: String

    var testDescription: String { "\(issuer) / \(account)" }

    static let all: [LabelCase] = [
        .init(issuer: "ACME", account: "alice", encodedIssuer: "ACME", encodedAccount: "alice"),
        .init(
            issuer: "ACME Co & Sons", account: "alice smith+test@example.com",
            encodedIssuer: "ACME%20Co%20%26%20Sons", encodedAccount: "alice%20smith%2Btest%40example.com"),
        .init(
            issuer: "Société Générale", account: "josé@例え.jp",
            encodedIssuer: "Soci%C3%A9t%C3%A9%20G%C3%A9n%C3%A9rale", encodedAccount: "jos%C3%A9%40%E4%BE%8B%E3%81%88.jp"),
        .init(
            issuer: "a/b?c=d#e%f", account: "x_y-z.~w",
            encodedIssuer: "a%2Fb%3Fc%3Dd%23e%25f", encodedAccount: "x_y-z.~w"),
    ]
}

/// The RFC 4226 secret "12345678901234567890" in base32.
private let rfcSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

/// otpauth URIs in the Key Uri Format: building, percent-encoding, parsing and refusals.
@Suite struct OTPAuthURITests {
    static let secret = try! OTPSecret(bytes: Array("12345678901234567890".utf8))

    // MARK: - Building

    @Test(arguments: LabelCase.all)
    func buildsTheKeyUriFormat(_ label: LabelCase) throws {
        let totp = try TOTP(secret: Self.secret)
        let uri = try OTPAuthURI(totp: totp, issuer: label.issuer, account: label.account)
        #expect(
            uri.absoluteString
                == "otpauth://totp/\(label.encodedIssuer):\(label.encodedAccount)?secret=\(rfcSecretBase32)"
                + "&issuer=\(label.encodedIssuer)&algorithm=SHA1&digits=6&period=30")
    }

    @Test(arguments: LabelCase.all)
    func parsesWhatItBuilds(_ label: LabelCase) throws {
        let uri = try OTPAuthURI(
            issuer: label.issuer, account: label.account, secret: Self.secret, algorithm: .sha512, digits: 8,
            kind: .totp(period: 60))
        let parsed = try OTPAuthURI(parsing: uri.absoluteString)
        #expect(parsed == uri)
        #expect(parsed.issuer == label.issuer)
        #expect(parsed.account == label.account)
        #expect(parsed.secret == Self.secret)
        #expect(parsed.algorithm == .sha512)
        #expect(parsed.digits == 8)
        #expect(parsed.kind == .totp(period: 60))
        let totp = try parsed.makeTOTP()
        #expect(totp.period == 60 && totp.digits == 8 && totp.algorithm == .sha512)
    }

    @Test func buildsAndParsesHOTP() throws {
        let uri = try OTPAuthURI(issuer: "ACME", account: "bob", secret: Self.secret, kind: .hotp(counter: 42))
        #expect(uri.absoluteString == "otpauth://hotp/ACME:bob?secret=\(rfcSecretBase32)&issuer=ACME&algorithm=SHA1&digits=6&counter=42")
        #expect(try OTPAuthURI(parsing: uri.absoluteString) == uri)
        let error = #expect(throws: OTPError.self) { try uri.makeTOTP() }
        #expect(error?.code == .invalidParameter)
    }

    @Test func buildsWithoutIssuer() throws {
        let uri = try OTPAuthURI(issuer: nil, account: "carol", secret: Self.secret)
        #expect(uri.absoluteString == "otpauth://totp/carol?secret=\(rfcSecretBase32)&algorithm=SHA1&digits=6&period=30")
        #expect(try OTPAuthURI(parsing: uri.absoluteString).issuer == nil)
    }

    @Test(arguments: ["AC:ME", "", " ACME", "ACME ", "AC\u{7}ME", String(repeating: "x", count: 257)])
    func invalidNamesAreRefused(_ name: String) {
        let issuer = #expect(throws: OTPError.self) { try OTPAuthURI(issuer: name, account: "alice", secret: Self.secret) }
        #expect(issuer?.code == .invalidParameter)
        let account = #expect(throws: OTPError.self) { try OTPAuthURI(issuer: "ACME", account: name, secret: Self.secret) }
        #expect(account?.code == .invalidParameter)
    }

    @Test func invalidDigitsAndPeriodAreRefused() {
        let digits = #expect(throws: OTPError.self) { try OTPAuthURI(issuer: "A", account: "b", secret: Self.secret, digits: 5) }
        #expect(digits?.code == .invalidParameter)
        let period = #expect(throws: OTPError.self) {
            try OTPAuthURI(issuer: "A", account: "b", secret: Self.secret, kind: .totp(period: 0))
        }
        #expect(period?.code == .invalidParameter)
    }

    // MARK: - Parsing other issuers' variants

    @Test func parsesCommonVariants() throws {
        // %3A for the colon, spaces after it, `+` for a space, lower-case names, padding,
        // an unknown parameter.
        let uri = try OTPAuthURI(
            parsing: "OTPAUTH://TOTP/ACME%20Co%3A%20%20alice@example.com?secret=gezdgnbvgy3tqojqgezdgnbvgy3tqojq"
                + "&issuer=ACME+Co&algorithm=sha256&digits=7&period=45&image=https%3a%2f%2fexample.com%2flogo.png")
        #expect(uri.issuer == "ACME Co")
        #expect(uri.account == "alice@example.com")
        #expect(uri.secret == Self.secret)
        #expect(uri.algorithm == .sha256)
        #expect(uri.digits == 7)
        #expect(uri.kind == .totp(period: 45))
    }

    @Test func defaultsApplyWhenParametersAreAbsent() throws {
        let uri = try OTPAuthURI(parsing: "otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)")
        #expect(uri.issuer == "ACME")
        #expect(uri.algorithm == .sha1)
        #expect(uri.digits == 6)
        #expect(uri.kind == .totp(period: 30))
        // The issuer parameter alone names the issuer too.
        #expect(try OTPAuthURI(parsing: "otpauth://totp/alice?secret=\(rfcSecretBase32)&issuer=ACME").issuer == "ACME")
    }

    /// Each malformed URI and the code it is refused with.
    @Test(arguments: [
        ("https://totp/ACME:alice?secret=\(rfcSecretBase32)", OTPError.Code.invalidURI),
        ("otpauth://", .invalidURI),
        ("otpauth://totp", .invalidURI),
        ("otpauth://motp/ACME:alice?secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://totp/ACME:alice", .invalidURI),
        ("otpauth://totp/ACME:alice?issuer=ACME", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&issuer=Evil", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&algorithm=MD5", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&digits=six", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&digits=-6", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&period=99999999999999999999", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&digits", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)#fragment", .invalidURI),
        ("otpauth://totp/AC%ZZME:alice?secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://totp/ACME:alice%?secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://totp/ACME:alice%C3?secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://hotp/ACME:alice?secret=\(rfcSecretBase32)", .invalidURI),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&digits=10", .invalidParameter),
        ("otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&period=0", .invalidParameter),
        ("otpauth://totp/ACME:?secret=\(rfcSecretBase32)", .invalidParameter),
        ("otpauth://totp/:alice?secret=\(rfcSecretBase32)", .invalidParameter),
        ("otpauth://totp/ACME:al:ice?secret=\(rfcSecretBase32)", .invalidParameter),
        ("otpauth://totp/ACME:alice?secret=GEZDGNBV1", .invalidBase32),
        ("otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP", .invalidSecret),
    ])
    func malformedURIsAreRefused(_ text: String, _ code: OTPError.Code) {
        let error = #expect(throws: OTPError.self) { try OTPAuthURI(parsing: text) }
        #expect(error?.code == code)
    }

    @Test func overlongURIsAreRefused() {
        let text = "otpauth://totp/ACME:alice?secret=\(rfcSecretBase32)&image=" + String(repeating: "x", count: 5000)
        let error = #expect(throws: OTPError.self) { try OTPAuthURI(parsing: text) }
        #expect(error?.code == .invalidURI)
    }

    // MARK: - Percent-encoding

    @Test func percentEncodingKeepsOnlyUnreservedCharacters() throws {
        #expect(OTPAuthURI.percentEncode("AZaz09-._~") == "AZaz09-._~")
        #expect(OTPAuthURI.percentEncode(" !\"#$%&'()*+,/:;=?@[]") == "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F%3A%3B%3D%3F%40%5B%5D")
        #expect(OTPAuthURI.percentEncode("€") == "%E2%82%AC")
        #expect(try OTPAuthURI.percentDecode(Array("%e2%82%ac+%2B"[...].utf8)[...], plusIsSpace: true) == "€ +")
        #expect(try OTPAuthURI.percentDecode(Array("a+b"[...].utf8)[...], plusIsSpace: false) == "a+b")
    }
}
