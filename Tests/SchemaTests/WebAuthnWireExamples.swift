import Foundation
import Schema

/// `fullExample`-style instances of the WebAuthn wire types of the `Schema` module, which has none:
/// every optional member is set, so that their encodings show every key the OpenAPI components
/// must declare.
///
/// One story: the demo tenant (`TenantResource.fullExample`) registers the credential of
/// `CredentialRegistered.fullExample` for `user-4711`, who then signs in with it. The binary members
/// are real encodings (client data JSON naming the options' challenge and the tenant's origin,
/// authenticator data over SHA-256("localhost"), a `none` attestation object carrying the event's
/// COSE key); handles and the signature are random bytes of the right shape.
enum WebAuthnWireExamples {
    static let tenant = TenantResource.fullExample
    static let registered = CredentialRegistered.fullExample
    static let username = "user-4711"
    static let credentialId = registered.credentialId

    static let registrationHandle =
        "d3QFAv2NN04Kn48YPkTZ6PnS7vQ6gIwnkedT8V-k3Lwkdw8guE9xCNeCkxc5xeRkFOvK864IOGKOkCfgdSw1ba6ufPbmziSv98l-4ZYt_6x477xgCPo5nBiNCcMSAZiPy"
        + "XX9kj8AELwVtr6RJ6MoifPr7bNT7k98OoaUIF1faiYN3DZxT6tbIzdXTK7OkcqeSUWRfVbnKHCWgcnmNOB-ljqgznnjYHykNmFS_RtsivPeXYMg"
    static let authenticationHandle =
        "vf_1twkWdCybkpL3N2d6ZSN-5mUuQefundnxyPtWwhQTV_dMqB_pxi0Gk0PAvL3ABK_F6lbETlLZ_t0EEhkVJUv1zyu0jeOZ7wHMlP4OxWBH0pV-WI5H1nq9ANnc1jR"
        + "27PzgbrOtstdyWuDKJ8emI32qUHoPVJLJh6pGwyivxjIyCKoeEQAHU_2ibXdbCbAF8NM4K3MH"
    static let registrationChallenge = "T1xCsnxM2DNL2KdK5CLa6fMhD7OBqho6syzInk_n-Uo"
    static let authenticationChallenge = "5mZAzKOxE6tYVm1kUoWdJ-8nBSFi6tV9FqXqTcIoIXA"
    /// Another credential of the user, excluded from registration.
    static let otherCredentialId = "mG3kC7cF0bP2wV4lJ1eR8tY6uI9oA5sD3fH7jK2lQ0A"

    static let origin = tenant.origins[0]

    // MARK: - Registration

    static var authenticatorSelection: AuthenticatorSelectionJSON {
        AuthenticatorSelectionJSON(
            authenticatorAttachment: "platform", residentKey: "required", requireResidentKey: true, userVerification: "required")
    }

    static var registrationOptionsRequest: RegistrationOptionsRequest {
        RegistrationOptionsRequest(
            username: username, displayName: "Ada Lovelace", authenticatorSelection: authenticatorSelection, attestation: "direct",
            hints: ["client-device"], mediation: "conditional")
    }

    static var creationOptions: CreationOptionsJSON {
        CreationOptionsJSON(
            rp: RelyingPartyEntityJSON(id: tenant.rpId, name: tenant.displayName),
            user: UserEntityJSON(id: registered.userHandle, name: username, displayName: "Ada Lovelace"),
            challenge: registrationChallenge,
            pubKeyCredParams: [-7, -8, -257, -37, -35, -36].map { CredentialParametersJSON(alg: $0) },
            timeout: 300_000,
            excludeCredentials: [CredentialDescriptorJSON(id: otherCredentialId, transports: ["usb", "nfc"])],
            authenticatorSelection: authenticatorSelection,
            hints: ["client-device"],
            attestation: "direct",
            extensions: ExtensionInputsJSON(credProps: true))
    }

    static var registrationOptionsResponse: RegistrationOptionsResponse {
        RegistrationOptionsResponse(handle: registrationHandle, publicKey: creationOptions, mediation: "conditional")
    }

    /// `ClientExtensionResultsJSON.CredProps` has no public initialiser: it is read from JSON.
    static func clientExtensionResults() throws -> ClientExtensionResultsJSON {
        let credProps = try SchemaDocuments.decodeWire(ClientExtensionResultsJSON.CredProps.self, from: .object(["rk": .bool(true)]))
        return ClientExtensionResultsJSON(credProps: credProps, appid: false)
    }

    /// The authenticator data of the registration: SHA-256("localhost"), flags UP UV BE BS AT,
    /// counter 0, AAGUID zero, the credential id and its COSE key.
    static let attestedAuthenticatorData =
        "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2NdAAAAAAAAAAAAAAAAAAAAAAAAAAAAIPctcQPE5oNRRJk_nO_371mf7qE7qIodzr0eOf6ACvnM"
        + "pQECAyYgASFYIEhW1CRfuNlIN6XTPKw0RbvzeaIlRMrDwwep-uq_-3WQIlgg1FZwd_RZRsqS_qgKCDvcVh7ScoKNo3w5h5fv3ihUSww"
    /// `{fmt: "none", attStmt: {}, authData: attestedAuthenticatorData}` in CBOR.
    static let attestationObject = "o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YVik" + attestedAuthenticatorData
    /// The credential key as a DER SubjectPublicKeyInfo (what `getPublicKey()` returns).
    static let subjectPublicKeyInfo =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESFbUJF-42Ug3pdM8rDRFu_N5oiVEysPDB6n66r_7dZDUVnB39FlGypL-qAoIO9xWHtJygo2jfDmHl-_eKFRLDA"

    static func registrationResponse() throws -> RegistrationResponseJSON {
        var response = RegistrationResponseJSON.Response(
            clientDataJSON: clientData(type: "webauthn.create", challenge: registrationChallenge), attestationObject: attestationObject,
            transports: ["internal", "hybrid"])
        response.authenticatorData = attestedAuthenticatorData
        response.publicKey = subjectPublicKeyInfo
        response.publicKeyAlgorithm = -7
        var credential = RegistrationResponseJSON(
            id: credentialId, rawId: credentialId, response: response, authenticatorAttachment: "platform")
        credential.clientExtensionResults = try clientExtensionResults()
        return credential
    }

    static func registrationFinishRequest() throws -> RegistrationFinishRequest {
        RegistrationFinishRequest(
            handle: registrationHandle, credential: try registrationResponse(), friendlyName: "Work laptop", deviceName: "Alice's Pixel 8")
    }

    static let registeredAt = registered.registeredAt

    /// As listed after a sign-in (`lastUsedAt` set) and a suspicion of cloning (`statusReason`);
    /// the finish call answers without either.
    static var credentialResource: CredentialResource {
        var resource = CredentialResource(
            credentialId: credentialId, aaguid: registered.aaguid, attestationFormat: "none", attestationType: "none", algorithm: -7,
            userVerified: true, backupEligible: true, backupState: true, transports: ["internal", "hybrid"], friendlyName: "Work laptop",
            status: "suspended", statusReason: "clone_suspected", createdAt: registeredAt, lastUsedAt: registeredAt.addingTimeInterval(3_600))
        resource.quickAuth = QuickAuthData(tenant: "demo", rpId: "localhost", credentialId: credentialId)
        resource.deviceName = "Alice's Pixel 8"
        resource.model = AuthenticatorModel(name: "YubiKey 5 Series", icon: "data:image/png;base64,iVBORw0KGgo=", protocolFamily: "fido2")
        return resource
    }

    static var credentialList: CredentialList { CredentialList(credentials: [credentialResource], displayName: "Kim 🌻") }

    // MARK: - Authentication

    static var authenticationOptionsRequest: AuthenticationOptionsRequest {
        AuthenticationOptionsRequest(username: username, userVerification: "required", hints: ["client-device", "hybrid"])
    }

    static var requestOptions: RequestOptionsJSON {
        RequestOptionsJSON(
            challenge: authenticationChallenge, timeout: 300_000, rpId: tenant.rpId,
            allowCredentials: [CredentialDescriptorJSON(id: credentialId, transports: ["internal", "hybrid"])],
            userVerification: "required", hints: ["client-device", "hybrid"],
            extensions: AuthenticationExtensionsJSON(appid: "https://login.example.com/u2f/appid.json"))
    }

    static var authenticationOptionsResponse: AuthenticationOptionsResponse {
        AuthenticationOptionsResponse(handle: authenticationHandle, publicKey: requestOptions)
    }

    static func authenticationResponse() throws -> AuthenticationResponseJSON {
        // SHA-256("localhost"), flags UP UV BE BS, counter 1; an ECDSA signature's DER shape.
        let response = AuthenticationResponseJSON.Response(
            clientDataJSON: clientData(type: "webauthn.get", challenge: authenticationChallenge),
            authenticatorData: "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MdAAAAAQ",
            signature: "MEUCIQA4-FaeWC6qSRQcoekjqiTll0DGPqBTpwpfeRjCOoYYjwIg3k7cXwRk2EQnDYDESPxY4r9CwjjrNInnx08OOtIUCj0",
            userHandle: registered.userHandle)
        var credential = AuthenticationResponseJSON(id: credentialId, rawId: credentialId, response: response)
        credential.authenticatorAttachment = "platform"
        credential.clientExtensionResults = try clientExtensionResults()
        return credential
    }

    static func authenticationFinishRequest() throws -> AuthenticationFinishRequest {
        AuthenticationFinishRequest(handle: authenticationHandle, credential: try authenticationResponse())
    }

    // MARK: - Session tokens

    static let signedInAt = registeredAt.addingTimeInterval(3_600)
    /// RFC 7638 §3.1's thumbprint, standing in for the signing key's.
    static let keyID = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"

    /// The claims `SessionIssuer` writes (Services/Authentication), for a user-verified sign-in.
    static var sessionTokenClaims: JSONValue {
        let iat = JSONValue.number(signedInAt.timeIntervalSince1970)
        return .object([
            "iss": "http://localhost:8080/authentication", "sub": .string(username), "aud": .string(tenant.id), "iat": iat,
            "exp": .number(signedInAt.timeIntervalSince1970 + 900), "auth_time": iat, "amr": .array(["hwk", "user", "mfa"]),
            "sid": "0kw_giKhkq88gktyU-08Fg", "jti": "FijvODrQIyjGIjxh4ZR7NA", "cid": .string(credentialId),
        ])
    }

    /// A `/.well-known/jwks.json` body as `SigningKeyRing.jwksJSON` writes it: one ES256 key.
    static var jwks: JSONValue {
        .object([
            "keys": .array([
                .object([
                    "kty": "EC", "crv": "P-256", "x": "Hgx85hhY1rR9IRSU-yFGT3nwUNYGHqqLcyWm1Icvjy8",
                    "y": "IHjkA4EFDW5TmyF2vMP4UGS6FqI7iS9nd9V3Qetk1mE", "kid": .string(keyID), "use": "sig", "alg": "ES256",
                ])
            ])
        ])
    }

    static func authenticationResult() throws -> AuthenticationResult {
        let header = base64URL(try JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": keyID, "typ": "JWT"], options: .sortedKeys))
        let payload = base64URL(Data(try sessionTokenClaims.jsonBytes))
        let signature = "4Rzj0Wd1pvuR1ilmN3BKyYqBTcBNGJbPuGNvhpoTuiuqE0q4xO6Wdz2bFMmKKAbCLe1fPWpgh3dXjDmgmP0k1w"
        return AuthenticationResult(
            sessionToken: "\(header).\(payload).\(signature)", username: username, credentialId: credentialId,
            expiresAt: signedInAt.addingTimeInterval(900))
    }

    // MARK: - Encoding

    /// base64url without padding, as WebAuthn's JSON forms carry bytes.
    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `clientDataJSON` as browsers serialise it (WebAuthn L3 §5.8.1.1), base64url.
    static func clientData(type: String, challenge: String) -> String {
        base64URL(Data(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8))
    }
}
