import FoundationEssentials
import JSON

// The sign-in ceremony's response bodies write their JSON directly (see `JSONDirectEncodable`
// for the profile figure). Members in key order, as `JSONValueEncoder` sorts them; `nil`
// optionals left out. `DirectEncodingTests` holds each writer to the type's `Encodable` output.

extension AuthenticationOptionsResponse: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.reserveCapacity(512)
        w.beginObject()
        w.writeMemberName("handle", first: true)
        w.writeString(handle)
        w.writeMemberName("publicKey", first: false)
        w.write(publicKey)
        w.endObject()
    }
}

extension RequestOptionsJSON: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.beginObject()
        w.writeMemberName("allowCredentials", first: true)
        w.beginArray()
        for (i, credential) in allowCredentials.enumerated() {
            if i > 0 { w.writeComma() }
            w.write(credential)
        }
        w.endArray()
        w.writeMemberName("challenge", first: false)
        w.writeString(challenge)
        if let extensions {
            w.writeMemberName("extensions", first: false)
            w.write(extensions)
        }
        w.writeMemberName("hints", first: false)
        w.writeStrings(hints)
        w.writeMemberName("rpId", first: false)
        w.writeString(rpId)
        if let timeout {
            w.writeMemberName("timeout", first: false)
            w.writeInt(timeout)
        }
        w.writeMemberName("userVerification", first: false)
        w.writeString(userVerification)
        w.endObject()
    }
}

extension CredentialDescriptorJSON: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.beginObject()
        w.writeMemberName("id", first: true)
        w.writeString(id)
        if let transports {
            w.writeMemberName("transports", first: false)
            w.writeStrings(transports)
        }
        w.writeMemberName("type", first: false)
        w.writeString(type)
        w.endObject()
    }
}

extension AuthenticationExtensionsJSON: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.beginObject()
        if let appid {
            w.writeMemberName("appid", first: true)
            w.writeString(appid)
        }
        w.endObject()
    }
}

extension AuthenticationResult: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.reserveCapacity(sessionToken.utf8.count + username.utf8.count + credentialId.utf8.count + 96)
        w.beginObject()
        w.writeMemberName("credentialId", first: true)
        w.writeString(credentialId)
        w.writeMemberName("expiresAt", first: false)
        w.writeDate(expiresAt)
        w.writeMemberName("sessionToken", first: false)
        w.writeString(sessionToken)
        w.writeMemberName("username", first: false)
        w.writeString(username)
        w.endObject()
    }
}
