import FuzzSupport
import JSON
import Schema

/// The request bodies of the routes, decoded as `HTTPRequest.decode` decodes them: one strict
/// parse (depth 64), then `JSONValueDecoder` into the route's Schema type.
///
/// Input: a first byte choosing the body type, then the body.
///
/// Properties: a refusal is a `JSONParser.SyntaxError` or a `DecodingError` (each a 400 with
/// its code at the HTTP edge; anything else would be a 500); a decoded body encoded by
/// `JSONValueEncoder` and decoded again is equal to itself; a body type that also reads itself
/// directly (`JSONDirectDecodable`, the sign-in's two) returns a value exactly when Codable
/// does, and the same value.
@main
enum HTTPBodyFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let bodyTypes: [any (Codable & Equatable & Sendable).Type] = [
        TenantUpsertRequest.self, APIKeyImportRequest.self,
        RegistrationOptionsRequest.self, RegistrationFinishRequest.self,
        AuthenticationOptionsRequest.self, AuthenticationFinishRequest.self,
        CredentialUpdateRequest.self, QuickSignInRequest.self,
        SignInStartRequest.self, FIDO2VerifyRequest.self, RefreshTokenRequest.self,
        RulesetExplainRequest.self, RegistrationAnswerRequest.self, RegistrationDecisionRequest.self,
        MethodCreateRequest.self, CodeRequest.self, PIIStoreRequest.self, PIIReadRequest.self,
        TransactionCreateRequest.self, TransactionAmendRequest.self, TCTokenVerifyRequest.self,
        // Stored documents read back from the databases, and the authentication settings body.
        TransactionDetails.self, AuthenticationSettings.self,
        // FIDO UAF (#15), devices and approvals (#16), data rights and retention (#18). Appended,
        // so that the corpus's selector bytes keep pointing at the types above where they can.
        UAFRegistrationRequestBody.self, UAFAuthenticationRequestBody.self, UAFResponseBody.self, UAFSettingsDocument.self,
        DeviceUpsertRequest.self, DeviceBindRequest.self, PushTokenUpdate.self, ApprovalCreateRequest.self, ApprovalDecisionRequest.self,
        UserDataRequest.self, RetentionSettings.self,
    ]

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let selector = bytes.first else { return 0 }
        let bodyType = bodyTypes[Int(selector) % bodyTypes.count]
        guard let value = try? JSONParser.parse(Array(bytes.dropFirst()), maximumDepth: 64) else { return 0 }
        check(bodyType, value)
        return 0
    }

    static func check<T: Codable & Equatable & Sendable>(_: T.Type, _ value: JSONValue) {
        let direct = (T.self as? any JSONDirectDecodable.Type)?.init(directJSON: value)
        let decoded: T
        do {
            decoded = try JSONValueDecoder().decode(T.self, from: value)
        } catch is DecodingError {
            if direct != nil { Fuzz.fail("\(T.self): read directly where Codable refuses") }
            return
        } catch {
            Fuzz.fail("\(T.self): refusal is not a DecodingError: \(type(of: error))")
        }
        if T.self is any JSONDirectDecodable.Type, (direct as? T) != decoded {
            Fuzz.fail("\(T.self): the direct reading differs from Codable's")
        }
        do {
            let encoded = try JSONValueEncoder().encode(decoded)
            let again = try JSONValueDecoder().decode(T.self, from: encoded)
            if again != decoded { Fuzz.fail("\(T.self) changed through its JSON") }
        } catch {
            Fuzz.fail("\(T.self) does not survive its own JSON: \(error)")
        }
    }
}
