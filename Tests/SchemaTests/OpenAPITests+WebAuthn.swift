import Foundation
import Schema
import Testing

/// The WebAuthn endpoints of `schemas/openapi/registration.yaml` and `authentication.yaml` against
/// the routes (Services/Registration/WebAuthnRegistrationRoutes.swift,
/// Services/Authentication/WebAuthnAuthenticationRoutes.swift) and the wire types of
/// `Schema/WebAuthnAPI.swift` and `Schema/WebAuthnJSON.swift`.
extension OpenAPITests {
    // MARK: - Operations

    /// The `rawValue`s of `FIDO.WebAuthnError.Code`, read from its source: this target does not
    /// depend on FIDO, and the finish calls answer every one of them as a 400 problem code.
    static let webAuthnErrorCodes: [String] = {
        let url = SchemaDocuments.repositoryRoot.appendingPathComponent("Shared/FIDO/WebAuthnError.swift")
        guard let source = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        // Only the private `Base` enum has raw values: `case challengeMismatch = "challenge_mismatch"`.
        return source.matches(of: /\bcase\s+\w+\s*=\s*"([a-z_]+)"/).map { String($0.output.1) }
    }()

    static func unique(_ codes: [String]) -> [String] {
        var seen = Set<String>()
        return codes.filter { seen.insert($0).inserted }
    }

    /// 400 codes of `POST …/webauthn/registrations`.
    static let registrationRefusals = unique(
        [
            "invalid_field", "malformed_json", "invalid_path", "invalid_handle", "handle_expired", "challenge_replayed", "credential_id_mismatch",
            "discoverable_credential_required",
        ]
            + webAuthnErrorCodes)
    /// 400 codes of `POST …/webauthn/authentications`.
    static let signInRefusals = unique(
        [
            "invalid_field", "malformed_json", "invalid_path", "invalid_handle", "handle_expired", "challenge_replayed", "credential_not_found",
            "credential_not_allowed", "credential_suspended", "sign_count_conflict", "policy_algorithm_not_allowed", "policy_aaguid_not_allowed",
            "policy_certification_level",
        ] + webAuthnErrorCodes)

    static let webAuthnRegistration: [Operation] = [
        Operation(
            "post", "/v1/tenants/{tenant}/webauthn/registrations/options", security: "rpApiKey,sessionToken",
            [
                "200": [], "400": bodyRefusals + ["invalid_username"], "401": ["unauthorized"],
                "403": ["forbidden", "registration_denied", "method_not_offered", "conditional_create_not_allowed"],
                "404": ["not_found", "tenant_not_found"], "413": ["payload_too_large"], "415": ["unsupported_media_type"],
                "503": unavailable,
            ]),
        Operation(
            "post", "/v1/tenants/{tenant}/webauthn/registrations", security: "rpApiKey,sessionToken",
            [
                "201": [], "400": registrationRefusals, "401": ["unauthorized"], "403": ["forbidden"],
                "404": ["not_found", "tenant_not_found"], "409": ["credential_exists", "conflict", "user_erasure_pending"], "413": ["payload_too_large"],
                "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "get", "/v1/tenants/{tenant}/users/{username}/credentials", security: "rpApiKey,sessionToken",
            ["200": [], "400": pathRefusals + ["invalid_username"], "401": ["unauthorized"], "403": ["forbidden", "registration_token_not_accepted"], "404": ["not_found"],
             "503": unavailable]),
    ]

    static let webAuthnAuthentication: [Operation] = [
        Operation(
            "post", "/v1/tenants/{tenant}/webauthn/authentications/options",
            [
                "200": [], "400": bodyRefusals, "403": ["direct_sign_in_disabled"], "404": ["not_found", "tenant_not_found"],
                "413": ["payload_too_large"], "415": ["unsupported_media_type"], "503": unavailable,
            ]),
        Operation(
            "post", "/v1/tenants/{tenant}/webauthn/authentications",
            [
                "200": [], "400": signInRefusals, "403": ["direct_sign_in_disabled"], "404": ["not_found", "tenant_not_found"],
                "413": ["payload_too_large"], "415": ["unsupported_media_type"], "423": ["method_locked"], "429": ["method_probation"],
                "503": signInUnavailable,
            ]),
        Operation("get", "/.well-known/jwks.json", ["200": []]),
    ]

    @Test func webAuthnErrorCodesAreReadFromTheSource() {
        let codes = Self.webAuthnErrorCodes
        #expect(codes.count >= 31, "Shared/FIDO/WebAuthnError.swift: \(codes.count) codes found")
        #expect(codes.count == Set(codes).count)
        #expect(["challenge_mismatch", "origin_not_allowed", "signature_invalid", "attestation_not_trusted"].allSatisfy(codes.contains))
    }

    // MARK: - Wire types

    static let webAuthnWireTypes: [WireType] = {
        typealias E = WebAuthnWireExamples
        let both: [ServiceName] = [.registration, .authentication]
        return [
            wire("RegistrationOptionsRequest", [.registration]) { E.registrationOptionsRequest },
            wire("AuthenticatorSelectionJSON", [.registration]) { E.authenticatorSelection },
            wire("RegistrationOptionsResponse", [.registration]) { E.registrationOptionsResponse },
            wire("CreationOptionsJSON", [.registration]) { E.creationOptions },
            wire("RelyingPartyEntityJSON", [.registration]) { E.creationOptions.rp },
            wire("UserEntityJSON", [.registration]) { E.creationOptions.user },
            wire("CredentialParametersJSON", [.registration]) { E.creationOptions.pubKeyCredParams[0] },
            wire("ExtensionInputsJSON", [.registration]) { E.creationOptions.extensions! },
            wire("CredentialDescriptorJSON", both) { E.creationOptions.excludeCredentials[0] },
            wire("RegistrationFinishRequest", [.registration]) { try E.registrationFinishRequest() },
            wire("RegistrationResponseJSON", [.registration]) { try E.registrationResponse() },
            wire("AuthenticatorAttestationResponseJSON", [.registration]) { try E.registrationResponse().response },
            wire("ClientExtensionResultsJSON", both, closed: false) { try E.clientExtensionResults() },
            wire("CredentialPropertiesOutput", both, closed: false) { try E.clientExtensionResults().credProps! },
            wire("CredentialResource", [.registration]) { E.credentialResource },
            wire("CredentialList", [.registration]) { E.credentialList },
            wire("AuthenticationOptionsRequest", [.authentication]) { E.authenticationOptionsRequest },
            wire("AuthenticationOptionsResponse", [.authentication]) { E.authenticationOptionsResponse },
            wire("RequestOptionsJSON", [.authentication]) { E.requestOptions },
            wire("AuthenticationFinishRequest", [.authentication]) { try E.authenticationFinishRequest() },
            wire("AuthenticationResponseJSON", [.authentication]) { try E.authenticationResponse() },
            wire("AuthenticatorAssertionResponseJSON", [.authentication]) { try E.authenticationResponse().response },
            wire("AuthenticationResult", [.authentication]) { try E.authenticationResult() },
        ]
    }()

    /// What the two WebAuthn documents both define must be defined alike.
    @Test(arguments: [
        "schemas/Base64URL", "schemas/CredentialId", "schemas/CeremonyHandle", "schemas/Username", "schemas/UserVerificationRequirement",
        "schemas/PublicKeyCredentialHint", "schemas/Hints", "schemas/AuthenticatorTransport", "schemas/CredentialDescriptorJSON",
        "schemas/ClientExtensionResultsJSON", "schemas/CredentialPropertiesOutput", "responses/BadRequest", "responses/PayloadTooLarge",
        "responses/UnsupportedMediaType",
    ])
    func webAuthnComponentsAreIdenticalInBothDocuments(_ component: String) throws {
        let registration = try #require(try SchemaDocuments.openAPIDocument(.registration).resolve(pointer: "#/components/\(component)"))
        #expect(try SchemaDocuments.openAPIDocument(.authentication).resolve(pointer: "#/components/\(component)") == registration)
    }

    // MARK: - Bodies

    /// The operation at `path` and `method`, and a validator for its document.
    static func operation(_ service: ServiceName, _ method: String, _ path: String) throws -> (JSONValue, MiniJSONSchema) {
        let doc = try SchemaDocuments.openAPIDocument(service)
        return (try #require(doc["paths"]?[path]?[method], "\(method) \(path)"), MiniJSONSchema(document: doc))
    }

    /// The only schema of a request body or a response, checking its media type.
    static func body(_ node: JSONValue?, _ mediaType: String = "application/json") throws -> JSONValue {
        #expect(node?["content"]?.keys == [mediaType])
        return try #require(node?["content"]?[mediaType]?["schema"])
    }

    @Test func registrationBodiesMatchTheSwiftExamples() throws {
        typealias E = WebAuthnWireExamples
        let (options, validator) = try Self.operation(.registration, "post", "/v1/tenants/{tenant}/webauthn/registrations/options")
        #expect(options["requestBody"]?["required"] == .bool(true))
        let optionsBody = try Self.body(options["requestBody"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.registrationOptionsRequest), against: optionsBody) == [])
        let minimal = try SchemaDocuments.wireJSON(RegistrationOptionsRequest(username: "user-4711"))
        #expect(validator.validate(minimal, against: optionsBody) == [])
        #expect(validator.validate(.object([:]), against: optionsBody).map(\.path) == ["$.username"])
        let optionsOK = options["responses"]?["200"]
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.registrationOptionsResponse), against: try Self.body(optionsOK)) == [])
        #expect(optionsOK?["headers"]?["Cache-Control"]?["schema"]?["const"] == .string("no-store"))

        let (finish, _) = try Self.operation(.registration, "post", "/v1/tenants/{tenant}/webauthn/registrations")
        #expect(finish["requestBody"]?["required"] == .bool(true))
        let finishBody = try Self.body(finish["requestBody"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.registrationFinishRequest()), against: finishBody) == [])
        // As the finish call answers: never used yet, maybe without a name.
        var registered = E.credentialResource
        registered.lastUsedAt = nil
        registered.friendlyName = nil
        let created = try Self.body(finish["responses"]?["201"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(registered), against: created) == [])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.credentialResource), against: created) == [])
        registered.status = "deleted"  // never listed nor returned
        #expect(validator.validate(try SchemaDocuments.wireJSON(registered), against: created).map(\.path) == ["$.status"])

        let (list, _) = try Self.operation(.registration, "get", "/v1/tenants/{tenant}/users/{username}/credentials")
        let listed = try Self.body(list["responses"]?["200"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.credentialList), against: listed) == [])
        #expect(validator.validate(try SchemaDocuments.wireJSON(CredentialList(credentials: [])), against: listed) == [])
    }

    @Test func authenticationBodiesMatchTheSwiftExamples() throws {
        typealias E = WebAuthnWireExamples
        let (options, validator) = try Self.operation(.authentication, "post", "/v1/tenants/{tenant}/webauthn/authentications/options")
        // The route reads an empty body as AuthenticationOptionsRequest().
        #expect(options["requestBody"]?["required"] == .bool(false))
        let optionsBody = try Self.body(options["requestBody"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.authenticationOptionsRequest), against: optionsBody) == [])
        #expect(validator.validate(try SchemaDocuments.wireJSON(AuthenticationOptionsRequest()), against: optionsBody) == [])
        let optionsOK = options["responses"]?["200"]
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.authenticationOptionsResponse), against: try Self.body(optionsOK)) == [])
        var usernameless = E.authenticationOptionsResponse
        usernameless.publicKey.allowCredentials = []
        #expect(validator.validate(try SchemaDocuments.wireJSON(usernameless), against: try Self.body(optionsOK)) == [])
        #expect(optionsOK?["headers"]?["Cache-Control"]?["schema"]?["const"] == .string("no-store"))

        let (finish, _) = try Self.operation(.authentication, "post", "/v1/tenants/{tenant}/webauthn/authentications")
        #expect(finish["requestBody"]?["required"] == .bool(true))
        let finishBody = try Self.body(finish["requestBody"])
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.authenticationFinishRequest()), against: finishBody) == [])
        let signedIn = finish["responses"]?["200"]
        #expect(validator.validate(try SchemaDocuments.wireJSON(E.authenticationResult()), against: try Self.body(signedIn)) == [])
        #expect(signedIn?["headers"]?["Cache-Control"]?["schema"]?["const"] == .string("no-store"), "the body is a bearer token")
    }

    /// Bodies as browsers and client libraries send them, beyond the full examples: the schema and
    /// the Swift decoder must both take them.
    @Test func browserShapedBodiesValidateAndDecode() throws {
        typealias E = WebAuthnWireExamples
        let registration = MiniJSONSchema(document: try SchemaDocuments.openAPIDocument(.registration))
        let authentication = MiniJSONSchema(document: try SchemaDocuments.openAPIDocument(.authentication))
        // Without the browser's conveniences, transports or extension outputs (older browsers).
        let bare = RegistrationResponseJSON(
            id: E.credentialId, rawId: E.credentialId,
            response: .init(clientDataJSON: E.clientData(type: "webauthn.create", challenge: E.registrationChallenge),
                            attestationObject: E.attestationObject))
        var finish = try SchemaDocuments.wireJSON(RegistrationFinishRequest(handle: E.registrationHandle, credential: bare))
        #expect(registration.validate(finish, component: "RegistrationFinishRequest") == [])
        _ = try SchemaDocuments.decodeWire(RegistrationFinishRequest.self, from: finish)
        // Extension outputs Signet does not read are accepted.
        let credential = try #require(finish["credential"])
        finish = finish.setting("credential", to: credential.setting("clientExtensionResults", to: .object([
            "credProps": .object(["rk": .bool(true), "authenticatorDisplayName": "Passwords"]), "prf": .object(["enabled": .bool(false)]),
        ])))
        #expect(registration.validate(finish, component: "RegistrationFinishRequest") == [])
        _ = try SchemaDocuments.decodeWire(RegistrationFinishRequest.self, from: finish)

        // A userHandle of null (some client libraries) or "" counts as absent.
        let assertion = try SchemaDocuments.wireJSON(E.authenticationFinishRequest())
        for userHandle: JSONValue in [.null, ""] {
            let credential = try #require(assertion["credential"])
            let response = try #require(credential["response"]).setting("userHandle", to: userHandle)
            let body = assertion.setting("credential", to: credential.setting("response", to: response))
            #expect(authentication.validate(body, component: "AuthenticationFinishRequest") == [], "\(userHandle)")
            let decoded = try SchemaDocuments.decodeWire(AuthenticationFinishRequest.self, from: body)
            #expect(decoded.credential.response.userHandle ?? "" == "", "\(userHandle)")
        }
        // The route refuses these; the schema says so.
        #expect(registration.validate(finish.setting("credential", to: credential.setting("type", to: "password")),
                                      component: "RegistrationFinishRequest").map(\.path) == ["$.credential.type"])
        #expect(authentication.validate(.object(["hints": .array(["usb"])]), component: "AuthenticationOptionsRequest").map(\.path)
                == ["$.hints[0]"])
        #expect(authentication.validate(.object(["userVerification": "always"]), component: "AuthenticationOptionsRequest").map(\.keyword)
                == ["enum"])
    }

    // MARK: - Session tokens

    @Test func jwksPublishesES256PublicKeysOnly() throws {
        typealias E = WebAuthnWireExamples
        let (jwks, validator) = try Self.operation(.authentication, "get", "/.well-known/jwks.json")
        #expect(jwks["security"] == nil)
        let ok = try #require(jwks["responses"]?["200"])
        let schema = try Self.body(ok, "application/jwk-set+json")
        #expect(ok["headers"]?["Cache-Control"]?["schema"]?["const"] == .string("public, max-age=300"))
        #expect(validator.validate(E.jwks, against: schema) == [])
        let key = try #require(E.jwks["keys"]?.arrayValue?.first)
        let withPrivatePart = key.setting("d", to: "870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE")
        let set = { (keys: [JSONValue]) in JSONValue.object(["keys": .array(keys)]) }
        #expect(validator.validate(set([withPrivatePart]), against: schema).map(\.keyword) == ["additionalProperties"])
        #expect(validator.validate(set([key.setting("alg", to: "RS256")]), against: schema).map(\.keyword) == ["const"])
        #expect(validator.validate(set([]), against: schema).map(\.keyword) == ["minItems"])
    }

    @Test func sessionTokenClaimsAreDescribed() throws {
        typealias E = WebAuthnWireExamples
        let doc = try SchemaDocuments.openAPIDocument(.authentication)
        let validator = MiniJSONSchema(document: doc)
        let claims = ["iss", "sub", "aud", "iat", "exp", "auth_time", "amr", "sid", "jti", "cid"]
        let schema = try #require(doc["components"]?["schemas"]?["SessionTokenClaims"])
        #expect(schema["properties"]?.keys == claims.sorted())
        #expect(schema["required"]?.arrayValue?.compactMap(\.stringValue) == claims.sorted())
        #expect(E.sessionTokenClaims.keys == claims.sorted())
        #expect(validator.validate(E.sessionTokenClaims, component: "SessionTokenClaims") == [])
        // Without user verification the authenticator proves presence only.
        #expect(validator.validate(E.sessionTokenClaims.setting("amr", to: .array(["hwk", "user"])), component: "SessionTokenClaims") == [])
        let password = E.sessionTokenClaims.setting("amr", to: .array(["pwd"]))
        #expect(validator.validate(password, component: "SessionTokenClaims").map(\.keyword).sorted() == ["enum", "minItems"])
        // The token in the example carries these claims, and every claim is named where the keys are published.
        let token = try E.authenticationResult().sessionToken
        let payload = try #require(token.split(separator: ".").dropFirst().first)
        let padded = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            + String(repeating: "=", count: (4 - payload.count % 4) % 4)
        #expect(try JSONValue(json: try #require(Data(base64Encoded: padded))) == E.sessionTokenClaims)
        let description = try #require(doc["paths"]?["/.well-known/jwks.json"]?["get"]?["description"]?.stringValue)
        for claim in claims {
            #expect(description.contains("\(claim),") || description.contains("\(claim) "), "\(claim) is not described")
        }
    }

    // MARK: - Patterns

    /// `UsernameRules.isValid` against the `Username` schema. Left out on purpose: the byte limit
    /// (Swift counts 256 UTF-8 bytes, JSON Schema 256 code points).
    static let usernames: [(String, Bool)] = [
        ("user-4711", true), ("a", true), ("Ada Lovelace", true), ("ada@example.com", true), ("名前", true), ("a\u{200B}b", true),
        ("a\u{2028}", true), (String(repeating: "x", count: 256), true),
        ("", false), (" a", false), ("a ", false), (" ", false), ("\ta", false), ("a\t", false), ("a\u{0}b", false), ("a\nb", false),
        ("a\u{7F}b", false), ("a\u{85}b", false), ("\u{A0}a", false), ("a\u{A0}", false), ("\u{1680}a", false), ("a\u{2000}", false),
        ("\u{200A}a", false), ("a\u{202F}", false), ("\u{205F}a", false), ("a\u{3000}", false), (String(repeating: "x", count: 257), false),
    ]

    @Test(arguments: usernames)
    func usernamePatternAgreesWithUsernameRules(_ username: String, _ valid: Bool) throws {
        #expect(UsernameRules.isValid(username) == valid, "the vector")
        let doc = try SchemaDocuments.openAPIDocument(.registration)
        #expect(MiniJSONSchema(document: doc).validate(.string(username), component: "Username").isEmpty == valid)
    }

    /// `Base64URL` against the decoder the routes use (`Crypto.Base64URL.decode`): the URL-safe
    /// alphabet, no padding, no length of 4n+1.
    static let base64URLStrings: [(String, Bool)] = [
        ("", true), ("AA", true), ("AAA", true), ("AAAA", true), ("AAAAAA", true), ("-_09azAZ", true),
        ("A", false), ("AAAAA", false), ("AA==", false), ("AAA=", false), ("A+/A", false), ("AA AA", false),
    ]

    @Test(arguments: base64URLStrings)
    func base64URLPatternMatchesTheDecoder(_ string: String, _ valid: Bool) throws {
        let doc = try SchemaDocuments.openAPIDocument(.registration)
        #expect(MiniJSONSchema(document: doc).validate(.string(string), component: "Base64URL").isEmpty == valid)
    }
}
