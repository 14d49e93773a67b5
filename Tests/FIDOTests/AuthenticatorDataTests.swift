import Crypto
import FIDO
import Testing

@Suite struct AuthenticatorDataTests {
    let authenticator: TestAuthenticator
    init() throws { authenticator = try TestAuthenticator() }

    @Test func assertionData() throws {
        let bytes = authenticator.authenticatorData(flags: 0x01 | 0x04 | 0x08, signCount: 0x0102_0304)
        let data = try AuthenticatorData(bytes: bytes)
        #expect(data.bytes == bytes)
        #expect(data.rpIDHash == SHA256.hash(Array(TestAuthenticator.rpID.utf8)))
        #expect(data.flags == [.userPresent, .userVerified, .backupEligible])
        #expect(data.userPresent && data.userVerified && data.backupEligible && !data.backupState)
        #expect(data.signCount == 0x0102_0304)
        #expect(data.attestedCredentialData == nil && data.extensions == nil)
    }

    @Test func attestedCredentialDataAndExtensions() throws {
        let ext = CBORValue.map([(key: .text("credProtect"), value: .int(2))])
        let bytes = authenticator.authenticatorData(signCount: 0, attested: true, extensions: ext)
        let data = try AuthenticatorData(bytes: bytes)
        let credential = try #require(data.attestedCredentialData)
        #expect(credential.aaguid.bytes == authenticator.aaguid)
        #expect(credential.aaguid.description == "a1a1a1a1-a1a1-a1a1-a1a1-a1a1a1a1a1a1")
        #expect(credential.credentialID == authenticator.credentialID)
        #expect(credential.credentialPublicKeyBytes == authenticator.coseKey)
        #expect(data.extensions == ext)
        #expect(data.flags.contains([.attestedCredentialData, .extensionData]))
    }

    @Test func reservedFlagsAreExposedNotRefused() throws {
        let data = try AuthenticatorData(bytes: authenticator.authenticatorData(flags: 0x01 | 0x02 | 0x20))
        #expect(data.flags.contains([.reserved1, .reserved2]))
    }

    @Test func backupStateWithoutEligibility() throws {
        let bytes = authenticator.authenticatorData(flags: 0x01 | 0x10)
        let error = #expect(throws: WebAuthnError.self) { try AuthenticatorData(bytes: bytes) }
        #expect(error?.code == .backupStateInconsistent)
        let lenient = try AuthenticatorData(bytes: bytes, requiringConsistentBackupFlags: false)
        #expect(!lenient.hasConsistentBackupFlags)
    }

    @Test func lengthsAreCheckedExactly() throws {
        let attested = authenticator.authenticatorData(signCount: 0, attested: true)
        let ext = CBORValue.map([(key: .text("a"), value: .int(1))])
        let cases: [(String, [UInt8], WebAuthnError.Code)] = [
            ("empty", [], .malformedAuthenticatorData),
            ("36 bytes", Array(authenticator.authenticatorData().prefix(36)), .malformedAuthenticatorData),
            ("38 bytes without AT/ED", authenticator.authenticatorData() + [0], .malformedAuthenticatorData),
            ("AT without data", authenticator.authenticatorData(flags: 0x41), .malformedAuthenticatorData),
            ("AT truncated in AAGUID", Array(attested.prefix(45)), .malformedAuthenticatorData),
            ("AT truncated in credential ID", Array(attested.prefix(60)), .malformedAuthenticatorData),
            ("AT truncated in key", Array(attested.dropLast()), .malformedAuthenticatorData),
            ("AT with trailing byte", attested + [0], .malformedAuthenticatorData),
            ("AT with a map after it but no ED", attested + ext.encoded, .malformedAuthenticatorData),
            ("ED without map", authenticator.authenticatorData(flags: 0x81), .malformedAuthenticatorData),
            ("ED with a non-map", authenticator.authenticatorData(flags: 0x81) + [0x01], .malformedAuthenticatorData),
            ("ED with integer keys", authenticator.authenticatorData(flags: 0x81) + CBORValue.map([(key: .int(1), value: .int(1))]).encoded, .malformedAuthenticatorData),
            ("ED with trailing byte", authenticator.authenticatorData(extensions: ext) + [0], .malformedAuthenticatorData),
            ("key is not CBOR", authenticator.authenticatorData(signCount: 0, attested: true, credentialPublicKey: [0xFF]), .malformedAuthenticatorData),
            ("key with duplicate labels", authenticator.authenticatorData(signCount: 0, attested: true, credentialPublicKey: [0xA2, 0x01, 0x02, 0x01, 0x02]), .malformedAuthenticatorData),
            ("credential ID over 1023", try TestAuthenticator(credentialID: Array(repeating: 1, count: 1024)).authenticatorData(signCount: 0, attested: true), .credentialIDTooLong),
            ("credential ID length over the data", Array(attested.prefix(53)) + [0xFF, 0xFF] , .credentialIDTooLong),
            ("credential ID length over the data (≤1023)", Array(attested.prefix(53)) + [0x03, 0xFF], .malformedAuthenticatorData),
        ]
        for (name, bytes, code) in cases {
            let error = #expect(throws: WebAuthnError.self, "\(name)") { try AuthenticatorData(bytes: bytes) }
            #expect(error?.code == code, "\(name)")
        }
    }

    @Test func aaguidText() {
        #expect(AAGUID("adce0002-35bc-c60a-648b-0b25f1f05503")?.description == "adce0002-35bc-c60a-648b-0b25f1f05503")
        #expect(AAGUID("ADCE000235BCC60A648B0B25F1F05503")?.description == "adce0002-35bc-c60a-648b-0b25f1f05503")
        #expect(AAGUID("adce0002-35bc-c60a-648b-0b25f1f0550") == nil)
        #expect(AAGUID("adce000235-bc-c60a-648b-0b25f1f05503") == nil)
        #expect(AAGUID("zdce0002-35bc-c60a-648b-0b25f1f05503") == nil)
        #expect(AAGUID.zero.isZero && AAGUID.zero.description == "00000000-0000-0000-0000-000000000000")
        #expect(AAGUID(bytes: [1, 2]) == nil)
    }
}

@Suite struct CollectedClientDataTests {
    @Test func parsesMembers() throws {
        let json = #"{"type":"webauthn.get","challenge":"abc","origin":"https:\/\/example.org","crossOrigin":true,"topOrigin":"https://top.example","tokenBinding":{"status":"supported"},"other_keys_can_be_added_here":{"nested":[1,2.5e3,null,false,"\ud83d\ude00"]}}"#
        let c = try CollectedClientData(bytes: Array(json.utf8))
        #expect(c.type == "webauthn.get")
        #expect(c.challenge == "abc")
        #expect(c.origin == "https://example.org")
        #expect(c.crossOrigin == true)
        #expect(c.topOrigin == "https://top.example")
        #expect(c.tokenBinding?.status == "supported")
    }

    @Test(arguments: [
        "", " ", "{", "{}", "null", #"{"type":"a","challenge":"b"}"#,
        #"{"type":"a","challenge":"b","origin":"c",}"#,
        #"{"type":"a","challenge":"b","origin":"c"}}"#,
        #"{"type":"a","challenge":"b","origin":"c","type":"d"}"#,
        #"{"type":"a","challenge":"b","origin":"c","crossOrigin":1}"#,
        #"{"type":"a","challenge":"b","origin":"c","x":"\ud800"}"#,
        #"{"type":"a","challenge":"b","origin":"c","x":"\u00"}"#,
        #"{"type":"a","challenge":"b","origin":"c","x":01}"#,
        #"{"type":"a","challenge":"b","origin":"c","x":1.}"#,
        #"{"type":"a","challenge":"b","origin":"c","x":tru}"#,
        "{\"type\":\"a\",\"challenge\":\"b\",\"origin\":\"c\",\"x\":\"tab\there\"}",
        #"{'type':"a","challenge":"b","origin":"c"}"#,
        #"{"type":"a","challenge":"b","origin":"c","tokenBinding":{"status":"present"}}"#,
        "{\"type\":\"a\",\"challenge\":\"b\",\"origin\":\"c\",\"x\":" + String(repeating: "[", count: 20) + String(repeating: "]", count: 20) + "}",
    ])
    func refuses(_ json: String) {
        let error = #expect(throws: WebAuthnError.self) { try CollectedClientData(bytes: Array(json.utf8)) }
        #expect(error?.code == .malformedClientData)
    }
}
