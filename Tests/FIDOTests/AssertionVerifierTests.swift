import Crypto
import FIDO
import Testing

/// WebAuthn L3 §7.2, one step broken at a time on an otherwise valid assertion.
@Suite struct AssertionVerifierTests {
    let authenticator: TestAuthenticator
    let challenge: [UInt8] = Array(repeating: 0x5A, count: 32)
    let verifier = AssertionVerifier(
        relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: false)

    init() throws { authenticator = try TestAuthenticator() }

    /// Verifies and returns the code of the error thrown (nil if none).
    func code(
        _ response: AuthenticationResponse, verifier: AssertionVerifier? = nil, record: CredentialRecord? = nil,
        allowCredentials: [[UInt8]] = [], identification: AssertionVerifier.UserIdentification = .beforeCeremony,
        challenge: [UInt8]? = nil
    ) -> WebAuthnError.Code? {
        do {
            _ = try (verifier ?? self.verifier).verify(
                response, expectedChallenge: challenge ?? self.challenge, credential: record ?? authenticator.record(),
                allowCredentials: allowCredentials, userIdentification: identification)
            return nil
        } catch {
            return error.code
        }
    }

    func clientData(type: String = "webauthn.get", origin: String = TestAuthenticator.origin, crossOrigin: Bool? = false, extra: String = "") -> [UInt8] {
        TestAuthenticator.clientData(type: type, challenge: challenge, origin: origin, crossOrigin: crossOrigin, extra: extra)
    }

    // MARK: - Success

    @Test func validAssertionVerifies() throws {
        let response = try authenticator.assertion(
            challenge: challenge, authenticatorData: authenticator.authenticatorData(flags: 0x01 | 0x04 | 0x08 | 0x10, signCount: 7),
            userHandle: [9, 9, 9])
        let result = try verifier.verify(
            response, expectedChallenge: challenge, credential: authenticator.record(signCount: 6, backupEligible: true),
            allowCredentials: [authenticator.credentialID])
        #expect(result.newSignCount == 7)
        #expect(result.userVerified && result.userPresent && result.backupEligible && result.backupState)
        #expect(!result.possibleClone)
        #expect(result.rpID == TestAuthenticator.rpID)
        #expect(result.origin == TestAuthenticator.origin)
        #expect(result.algorithm == .es256)
    }

    @Test func preParsedKeyGivesTheSameResult() throws {
        let key = try COSEKey(bytes: authenticator.coseKey)
        let record = CredentialRecord(id: authenticator.credentialID, parsedPublicKey: key, signCount: 0, backupEligible: false, userHandle: [9, 9, 9])
        let result = try verifier.verify(try authenticator.assertion(challenge: challenge), expectedChallenge: challenge, credential: record)
        #expect(result.newSignCount == 1)
    }

    // MARK: - Steps 3, 5, 6: credential and user

    @Test func idMustEncodeRawID() throws {
        var response = try authenticator.assertion(challenge: challenge)
        response.id = "AAAA"
        #expect(code(response) == .credentialIDMismatch)
    }

    @Test func step5CredentialMustBeInAllowCredentials() throws {
        #expect(code(try authenticator.assertion(challenge: challenge), allowCredentials: [[1, 2, 3]]) == .credentialNotAllowed)
    }

    @Test func step6RawIDMustBeTheRecordsID() throws {
        var record = authenticator.record()
        record.id = [0xFF]
        #expect(code(try authenticator.assertion(challenge: challenge), record: record) == .credentialIDMismatch)
    }

    @Test func step6UserHandleMustMatchWhenPresent() throws {
        #expect(code(try authenticator.assertion(challenge: challenge, userHandle: [1])) == .userHandleMismatch)
        #expect(code(try authenticator.assertion(challenge: challenge, userHandle: [9, 9, 9])) == nil)
        #expect(code(try authenticator.assertion(challenge: challenge)) == nil)  // absent is fine when the user is known
    }

    @Test func step6DiscoverableNeedsUserHandle() throws {
        #expect(code(try authenticator.assertion(challenge: challenge), identification: .byUserHandle) == .userHandleMissing)
        #expect(code(try authenticator.assertion(challenge: challenge, userHandle: []), identification: .byUserHandle) == .userHandleMissing)
        #expect(code(try authenticator.assertion(challenge: challenge, userHandle: [2]), identification: .byUserHandle) == .userHandleMismatch)
        #expect(code(try authenticator.assertion(challenge: challenge, userHandle: [9, 9, 9]), identification: .byUserHandle) == nil)
    }

    // MARK: - Steps 8–13: client data

    @Test(arguments: [
        "not json", "[]", #"{"type":"webauthn.get"}"#, #"{"type":1,"challenge":"x","origin":"y"}"#,
        #"{"type":"webauthn.get","type":"webauthn.get","challenge":"x","origin":"y"}"#,
        #"{"type":"webauthn.get","challenge":"x","origin":"y","crossOrigin":"false"}"#,
        #"{"type":"webauthn.get","challenge":"x","origin":"y","topOrigin":true}"#,
        #"{"type":"webauthn.get","challenge":"x","origin":"y","tokenBinding":{"id":"a"}}"#,
        #"{"type":"webauthn.get","challenge":"x","origin":"y"} x"#,
    ])
    func steps8to9MalformedClientData(_ json: String) throws {
        let response = try authenticator.assertion(challenge: challenge, clientDataJSON: Array(json.utf8))
        #expect(code(response) == .malformedClientData)
    }

    @Test func steps8to9ClientDataSizeAndEncoding() throws {
        let big = clientData(extra: #","pad":""# + String(repeating: "a", count: CollectedClientData.maximumLength) + #"""#)
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: big)) == .malformedClientData)
        var invalidUTF8 = clientData()
        invalidUTF8.insert(0xFF, at: 2)
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: invalidUTF8)) == .malformedClientData)
        // A leading byte-order mark is stripped by UTF-8 decode (§7.2 step 8) — and still signed over.
        let bom = [0xEF, 0xBB, 0xBF] + clientData()
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: bom)) == nil)
    }

    @Test func step10Type() throws {
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(type: "webauthn.create"))) == .clientDataTypeMismatch)
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(type: "WebAuthn.get"))) == .clientDataTypeMismatch)
    }

    @Test func step11Challenge() throws {
        #expect(code(try authenticator.assertion(challenge: challenge), challenge: Array(repeating: 0x5B, count: 32)) == .challengeMismatch)
        #expect(code(try authenticator.assertion(challenge: challenge), challenge: []) == .challengeMismatch)
        // Padded or standard-alphabet encodings of the right bytes are not the base64url encoding.
        let padded = Array(#"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(challenge))=","origin":"https://example.org"}"#.utf8)
        #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: padded)) == .challengeMismatch)
    }

    /// Challenges of every length up to 70 bytes (every base64 tail) compare as encoded by clients.
    @Test func step11ChallengeOfAnyLength() throws {
        for n in 1...70 {
            let c = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let data = TestAuthenticator.clientData(challenge: c)
            let response = try authenticator.assertion(challenge: c, clientDataJSON: data)
            #expect(code(response, challenge: c) == nil, "length \(n)")
            #expect(code(response, challenge: c + [0]) == .challengeMismatch, "length \(n)")
        }
    }

    @Test func step12Origin() throws {
        for origin in ["https://evil.example", "https://example.org/", "https://EXAMPLE.org", "https://example.org:443", "http://example.org"] {
            #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(origin: origin))) == .originNotAllowed)
        }
        // Related origins configured for the relying party are accepted.
        let related = AssertionVerifier(
            relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin, "https://login.example.com/"]),
            requiresUserVerification: false)
        let response = try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(origin: "https://login.example.com"))
        #expect(code(response, verifier: related) == nil)
    }

    @Test func step13CrossOriginAndTopOrigin() throws {
        let crossOrigin = try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(crossOrigin: true))
        #expect(code(crossOrigin) == .crossOriginNotAllowed)
        let topOnly = try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(extra: #","topOrigin":"https://partner.example""#))
        #expect(code(topOnly) == .crossOriginNotAllowed)

        let embeddable = AssertionVerifier(
            relyingParty: RelyingParty(
                id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin], allowsCrossOrigin: true, topOrigins: ["https://partner.example/"]),
            requiresUserVerification: false)
        #expect(code(crossOrigin, verifier: embeddable) == nil)
        let goodTop = try authenticator.assertion(
            challenge: challenge, clientDataJSON: clientData(crossOrigin: true, extra: #","topOrigin":"https://partner.example""#))
        #expect(code(goodTop, verifier: embeddable) == nil)
        let badTop = try authenticator.assertion(
            challenge: challenge, clientDataJSON: clientData(crossOrigin: true, extra: #","topOrigin":"https://evil.example""#))
        #expect(code(badTop, verifier: embeddable) == .topOriginNotAllowed)
        // Cross-origin allowed with no trusted embedders: any topOrigin is refused.
        let noTops = AssertionVerifier(
            relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin], allowsCrossOrigin: true),
            requiresUserVerification: false)
        #expect(code(goodTop, verifier: noTops) == .topOriginNotAllowed)
    }

    @Test func step13TokenBinding() throws {
        for (extra, expected) in [
            (#","tokenBinding":{"status":"present","id":"AAAA"}"#, WebAuthnError.Code.tokenBindingInvalid),
            (#","tokenBinding":{"status":"not-supported"}"#, .tokenBindingInvalid),
            (#","tokenBinding":{"status":"supported"}"#, nil),
            (#","tokenBinding":"unused""#, nil),
        ] as [(String, WebAuthnError.Code?)] {
            #expect(code(try authenticator.assertion(challenge: challenge, clientDataJSON: clientData(extra: extra))) == expected)
        }
    }

    // MARK: - Steps 14–18: authenticator data

    @Test func step14MalformedAuthenticatorData() throws {
        let good = authenticator.authenticatorData()
        for bad in [Array(good.prefix(36)), good + [0], [UInt8](), authenticator.authenticatorData(flags: 0x01 | 0x80)] {
            #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: bad)) == .malformedAuthenticatorData)
        }
    }

    @Test func step14RPIDHash() throws {
        let other = authenticator.authenticatorData(rpID: "evil.example")
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: other)) == .rpIDHashMismatch)
        // Several acceptable RP IDs (a domain migration): any of them.
        let two = AssertionVerifier(
            relyingParty: RelyingParty(ids: ["old.example", TestAuthenticator.rpID], origins: [TestAuthenticator.origin]),
            requiresUserVerification: false)
        #expect(code(try authenticator.assertion(challenge: challenge), verifier: two) == nil)
    }

    @Test func step15UserPresent() throws {
        let noUP = authenticator.authenticatorData(flags: 0x04)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: noUP)) == .userNotPresent)
    }

    @Test func step16UserVerification() throws {
        let noUV = authenticator.authenticatorData(flags: 0x01)
        let strict = AssertionVerifier(
            relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: true)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: noUV), verifier: strict) == .userVerificationRequired)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: noUV)) == nil)
    }

    @Test func step17BackupStateRequiresEligibility() throws {
        let bsOnly = authenticator.authenticatorData(flags: 0x01 | 0x10)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: bsOnly)) == .backupStateInconsistent)
    }

    @Test func step18BackupEligibilityNeverChanges() throws {
        let nowEligible = authenticator.authenticatorData(flags: 0x01 | 0x08)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: nowEligible)) == .backupEligibilityChanged)
        let noLonger = authenticator.authenticatorData(flags: 0x01)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: noLonger), record: authenticator.record(backupEligible: true)) == .backupEligibilityChanged)
        // BS may change either way.
        let backedUp = authenticator.authenticatorData(flags: 0x01 | 0x08 | 0x10)
        #expect(code(try authenticator.assertion(challenge: challenge, authenticatorData: backedUp), record: authenticator.record(backupEligible: true)) == nil)
    }

    @Test func step19ExtensionsAreReturned() throws {
        let ext = CBORValue.map([(key: .text("credProps"), value: .map([(key: .text("rk"), value: .bool(true))]))])
        let authData = authenticator.authenticatorData(extensions: ext)
        let result = try verifier.verify(
            try authenticator.assertion(challenge: challenge, authenticatorData: authData), expectedChallenge: challenge,
            credential: authenticator.record())
        #expect(result.extensions == ext)
    }

    // MARK: - Step 21: signature

    @Test func step21Signature() throws {
        var tampered = try authenticator.assertion(challenge: challenge)
        tampered.signature[tampered.signature.count - 1] ^= 1
        #expect(code(tampered) == .signatureInvalid)

        var empty = try authenticator.assertion(challenge: challenge)
        empty.signature = []
        #expect(code(empty) == .signatureInvalid)

        // Signed by another key.
        let other = try TestAuthenticator()
        #expect(code(try other.assertion(challenge: challenge)) == .signatureInvalid)

        // The signature covers the authenticator data: change the counter after signing.
        var replayed = try authenticator.assertion(challenge: challenge)
        replayed.authenticatorData = authenticator.authenticatorData(signCount: 2)
        #expect(code(replayed) == .signatureInvalid)

        // … and the client data: change it after signing.
        var swapped = try authenticator.assertion(challenge: challenge)
        swapped.clientDataJSON = clientData(extra: #","other":1"#)
        #expect(code(swapped) == .signatureInvalid)

        // A raw r‖s signature is not the DER encoding WebAuthn uses.
        var raw = try authenticator.assertion(challenge: challenge)
        raw.signature = try #require(ECDSASignature.raw(fromDER: raw.signature, size: 32))
        #expect(code(raw) == .signatureInvalid)
    }

    @Test func step21AlgorithmComesFromTheStoredKey() throws {
        // A stored key declaring ES384 on a P-256 point is refused as malformed …
        var record = authenticator.record()
        record.publicKey = authenticator.coseKeyValue(alg: -35).encoded
        #expect(code(try authenticator.assertion(challenge: challenge), record: record) == .malformedCredentialPublicKey)
        // … garbage is malformed …
        record.publicKey = [0xA0]
        #expect(code(try authenticator.assertion(challenge: challenge), record: record) == .malformedCredentialPublicKey)
        // … ML-DSA cannot be verified with OpenSSL 3.0 …
        record.publicKey = CBORValue.map([(key: .int(1), value: .int(7)), (key: .int(3), value: .int(-48)), (key: .int(-1), value: .bytes([1, 2, 3]))]).encoded
        #expect(code(try authenticator.assertion(challenge: challenge), record: record) == .algorithmUnsupported)
        // … and a policy can retire an algorithm after registration.
        let noES256 = AssertionVerifier(
            relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: false,
            allowedAlgorithms: [.eddsa])
        #expect(code(try authenticator.assertion(challenge: challenge), verifier: noES256) == .algorithmNotAllowed)
    }

    // MARK: - Step 22: counter

    @Test(arguments: [
        (stored: UInt32(0), new: UInt32(0), ok: true),
        (stored: 0, new: 1, ok: true),
        (stored: 5, new: 6, ok: true),
        (stored: 5, new: 5, ok: false),
        (stored: 5, new: 4, ok: false),
        (stored: 5, new: 0, ok: false),
        (stored: UInt32.max, new: UInt32.max, ok: false),
    ])
    func step22SignCount(_ c: (stored: UInt32, new: UInt32, ok: Bool)) throws {
        let response = try authenticator.assertion(challenge: challenge, authenticatorData: authenticator.authenticatorData(signCount: c.new))
        #expect(code(response, record: authenticator.record(signCount: c.stored)) == (c.ok ? nil : .signCountNotIncreased))

        let flagging = AssertionVerifier(
            relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: false,
            counterPolicy: .acceptAndFlag)
        let result = try flagging.verify(response, expectedChallenge: challenge, credential: authenticator.record(signCount: c.stored))
        #expect(result.possibleClone == !c.ok)
        #expect(result.newSignCount == c.new)
    }

    // MARK: - Order

    /// With several faults, the first step in the specification's order is reported.
    @Test func failuresComeInSpecificationOrder() throws {
        let manyFaults = AuthenticationResponse(
            rawID: authenticator.credentialID,
            clientDataJSON: clientData(type: "webauthn.create", origin: "https://evil.example"),
            authenticatorData: authenticator.authenticatorData(rpID: "evil.example", flags: 0x10), signature: [1])
        #expect(code(manyFaults) == .clientDataTypeMismatch)
        var next = manyFaults
        next.clientDataJSON = clientData(origin: "https://evil.example")
        #expect(code(next, challenge: [1]) == .challengeMismatch)
        #expect(code(next) == .originNotAllowed)
        next.clientDataJSON = clientData()
        #expect(code(next) == .rpIDHashMismatch)
        next.authenticatorData = authenticator.authenticatorData(flags: 0x10)
        #expect(code(next) == .userNotPresent)
        next.authenticatorData = authenticator.authenticatorData(flags: 0x11)
        #expect(code(next) == .backupStateInconsistent)
        next.authenticatorData = authenticator.authenticatorData(flags: 0x01)
        #expect(code(next) == .signatureInvalid)
    }

    /// Descriptions name the check, never the values that failed it.
    @Test func errorDescriptionsCarryNoSecrets() throws {
        let response = try authenticator.assertion(challenge: challenge)
        do {
            _ = try verifier.verify(response, expectedChallenge: [7, 7, 7], credential: authenticator.record())
            Issue.record("expected a failure")
        } catch {
            #expect(error.code.rawValue == "challenge_mismatch")
            #expect(error.description == "WebAuthnError(challenge_mismatch, §7.2 step 11)")
            for secret in [Base64URL.encode(challenge), Base64URL.encode([7, 7, 7]), Base64URL.encode(authenticator.credentialID)] {
                #expect(!String(reflecting: error).contains(secret))
            }
        }
    }

    /// Secure Payment Confirmation client data: the payment member is read, and required for
    /// `payment.get`.
    @Test func paymentClientData() throws {
        let spc = Array(#"{"type":"payment.get","challenge":"AA","origin":"https://shop.example","payment":{"rpId":"bank.example","topOrigin":"https://shop.example","payeeName":"ACME Ltd","total":{"currency":"EUR","value":"385.00"},"instrument":{"displayName":"Card","icon":"https://bank.example/i.png"}}}"#.utf8)
        let parsed = try CollectedClientData(bytes: spc)
        #expect(parsed.payment?.totalValue == "385.00" && parsed.payment?.payeeName == "ACME Ltd" && parsed.payment?.topOrigin == "https://shop.example")
        let missing = Array(#"{"type":"payment.get","challenge":"AA","origin":"https://shop.example"}"#.utf8)
        #expect(throws: WebAuthnError.self) { try CollectedClientData(bytes: missing) }
        let noPayee = Array(#"{"type":"payment.get","challenge":"AA","origin":"o","payment":{"rpId":"b","topOrigin":"t","total":{"currency":"EUR","value":"1"},"instrument":{"displayName":"C"}}}"#.utf8)
        #expect(throws: WebAuthnError.self) { try CollectedClientData(bytes: noPayee) }
        let plain = try CollectedClientData(bytes: Array(#"{"type":"webauthn.get","challenge":"AA","origin":"o"}"#.utf8))
        #expect(plain.payment == nil)
    }
}
