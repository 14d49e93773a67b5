import JSON

// The sign-in ceremony's two request bodies read themselves from the parsed tree directly
// (see `JSONDirectDecodable`: success only; anything that does not fit goes to Codable, whose
// error names the field). Each reads every stored property, by the rules of the synthesized
// `Decodable` conformance (`JSONDirectObject`); `DirectDecodingTests` checks them against it.

extension AuthenticationOptionsRequest: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let username = o.optionalString("username"),
            let userVerification = o.optionalString("userVerification"), let hints = o.optionalStringArray("hints")
        else { return nil }
        self.init(username: username, userVerification: userVerification, hints: hints)
    }
}

extension AuthenticationFinishRequest: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let handle = o.string("handle"),
            let credential = o.value("credential", as: AuthenticationResponseJSON.self)
        else { return nil }
        self.init(handle: handle, credential: credential)
    }
}

extension AuthenticationResponseJSON: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let id = o.string("id"), let rawId = o.string("rawId"), let type = o.string("type"),
            let response = o.value("response", as: Response.self), let attachment = o.optionalString("authenticatorAttachment"),
            let extensions = o.optionalValue("clientExtensionResults", as: ClientExtensionResultsJSON.self)
        else { return nil }
        self.init(id: id, rawId: rawId, response: response)
        self.type = type
        authenticatorAttachment = attachment
        clientExtensionResults = extensions
    }
}

extension AuthenticationResponseJSON.Response: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let clientDataJSON = o.string("clientDataJSON"),
            let authenticatorData = o.string("authenticatorData"), let signature = o.string("signature"),
            let userHandle = o.optionalString("userHandle")
        else { return nil }
        self.init(clientDataJSON: clientDataJSON, authenticatorData: authenticatorData, signature: signature, userHandle: userHandle)
    }
}

extension ClientExtensionResultsJSON: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let credProps = o.optionalValue("credProps", as: CredProps.self),
            let appid = o.optionalBool("appid")
        else { return nil }
        self.init(credProps: credProps, appid: appid)
    }
}

extension ClientExtensionResultsJSON.CredProps: JSONDirectDecodable {
    public init?(directJSON value: JSONValue) {
        guard let o = JSONDirectObject(value), let rk = o.optionalBool("rk") else { return nil }
        self.init(rk: rk)
    }
}
