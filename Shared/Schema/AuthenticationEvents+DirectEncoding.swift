import FoundationEssentials
import JSON

// The event every sign-in writes to the outbox writes its JSON directly, like the sign-in's
// response bodies (`WebAuthnJSON+DirectEncoding.swift`): through the generic encoder it was
// 1.8 % of the authentication service's CPU under the ceremony load (`perf record`, release).
// `EventCoding.encode` takes this writer; `DirectEncodingTests` holds it to the `Encodable` output.

extension AuthenticationSucceeded: JSONDirectEncodable {
    public func writeJSON(to w: inout JSONWriter) {
        w.reserveCapacity(tenantId.utf8.count + credentialId.utf8.count + (sessionId?.utf8.count ?? 0) + (aaid?.utf8.count ?? 0) + 192)
        w.beginObject()
        var first = true
        if let aaid {
            w.writeMemberName("aaid", first: true)
            w.writeString(aaid)
            first = false
        }
        w.writeMemberName("authenticatedAt", first: first)
        w.writeDate(authenticatedAt)
        w.writeMemberName("backupState", first: false)
        w.writeBool(backupState)
        w.writeMemberName("credentialId", first: false)
        w.writeString(credentialId)
        w.writeMemberName("method", first: false)
        w.writeString(method)
        if let sessionId {
            w.writeMemberName("sessionId", first: false)
            w.writeString(sessionId)
        }
        w.writeMemberName("signCount", first: false)
        w.writeInt(signCount)
        w.writeMemberName("tenantId", first: false)
        w.writeString(tenantId)
        w.writeMemberName("userVerified", first: false)
        w.writeBool(userVerified)
        w.endObject()
    }
}
