import Foundation
import JSON
import Schema

/// The HTTP server's JSON coding of the sign-in ceremony's bodies (decode the finish request,
/// encode the options response), beside Foundation's JSONDecoder/JSONEncoder with the settings
/// the server used before (JSONSerialization pre-check included, as HTTPRequest.decode did).
func jsonBenchmark(seconds: Double) throws {
    let b64 = { (n: Int) in String(repeating: "AbCdEfGh-_", count: n / 10 + 1).prefix(n) }
    let finish = AuthenticationFinishRequest(
        handle: String(b64(180)),
        credential: AuthenticationResponseJSON(
            id: String(b64(43)), rawId: String(b64(43)),
            response: .init(clientDataJSON: String(b64(180)), authenticatorData: String(b64(50)), signature: String(b64(96)), userHandle: String(b64(22)))))
    let finishBody = Array(try JSONValueEncoder().encodeToBytes(finish))
    let options = AuthenticationOptionsResponse(
        handle: String(b64(180)),
        publicKey: RequestOptionsJSON(
            challenge: String(b64(43)), timeout: 300_000, rpId: "localhost",
            allowCredentials: [CredentialDescriptorJSON(id: String(b64(43)), transports: ["internal", "hybrid"])],
            userVerification: "preferred", hints: []))

    let foundationEncoder = JSONEncoder()
    foundationEncoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    foundationEncoder.dateEncodingStrategy = .iso8601
    let foundationDecode = rate(seconds: seconds) {
        _ = try? JSONSerialization.jsonObject(with: Data(finishBody))
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        _ = try? d.decode(AuthenticationFinishRequest.self, from: Data(finishBody))
    }
    let strictDecode = try rate(seconds: seconds) {
        _ = try JSONValueDecoder().decode(AuthenticationFinishRequest.self, from: finishBody, maximumDepth: 64)
    }
    let foundationEncode = try rate(seconds: seconds) { _ = try foundationEncoder.encode(options) }
    let strictEncode = try rate(seconds: seconds) { _ = try JSONValueEncoder().encodeToBytes(options) }
    print(String(format: "json_decode_finish_per_s %.0f  (Foundation JSONSerialization + JSONDecoder: %.0f)", strictDecode, foundationDecode))
    let directEncode = rate(seconds: seconds) { _ = options.directJSONBytes }
    let result = AuthenticationResult(
        sessionToken: String(b64(420)), username: "user-1234@example.com", credentialId: String(b64(43)), expiresAt: Date(timeIntervalSince1970: 1_764_000_000))
    let resultEncode = try rate(seconds: seconds) { _ = try JSONValueEncoder().encodeToBytes(result) }
    let resultDirect = rate(seconds: seconds) { _ = result.directJSONBytes }
    print(String(format: "json_encode_options_per_s %.0f  (Foundation JSONEncoder: %.0f)", strictEncode, foundationEncode))
    print(String(format: "json_direct_options_per_s %.0f  (JSONDirectEncodable; the encoder above: %.0f)", directEncode, strictEncode))
    print(String(format: "json_encode_result_per_s %.0f  json_direct_result_per_s %.0f", resultEncode, resultDirect))
    let event = AuthenticationSucceeded.fullExample
    let eventEncode = try rate(seconds: seconds) { _ = try JSONValueEncoder().encodeToBytes(event) }
    let eventDirect = try rate(seconds: seconds) { _ = try EventCoding.encode(event) }
    print(String(format: "json_encode_event_per_s %.0f  json_event_coding_per_s %.0f  (the sign-in event: generic encoder, EventCoding's direct writer)", eventEncode, eventDirect))
    print(String(format: "µs per sign-in for the two bodies: encoder %.2f, direct %.2f", 1e6 / strictEncode + 1e6 / resultEncode, 1e6 / directEncode + 1e6 / resultDirect))
    try signInDecodeBenchmark(seconds: seconds)
}

/// The two sign-in request bodies as `HTTPRequest.decode` reads them: the strict parse
/// (`JSONParser`), Codable over its tree (`JSONValueDecoder`), and both, in µs per body; and
/// the direct reading of the tree (`JSONDirectDecodable`), which the server now uses for them.
/// Foundation's `JSONDecoder` on the same bytes is the anchor. Three runs, each timing the
/// parts in alternating slices of CPU time, so that a change of the machine's speed shows as a
/// spread between runs rather than as a difference between the parts.
func signInDecodeBenchmark(seconds: Double) throws {
    // What the ceremony client sends (Tools/Bench/main.swift): the options request as
    // JSONEncoder writes `AuthenticationOptionsRequest(username:)`, the finish request as
    // `leanFinishBody` writes a software authenticator's assertion. Lengths are those of a
    // real ES256 assertion in base64url: clientDataJSON of a 32-byte challenge and an origin
    // (~180 characters), authenticatorData 37 bytes (50), a DER signature of 70-72 bytes
    // (~95), a credential id of 32 bytes (43), a user handle of 16 bytes (22).
    let b64 = { (n: Int, seed: Int) in
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        return String((0..<n).map { alphabet[($0 * 37 + seed * 11 + ($0 >> 3)) % 64] })
    }
    let optionsBody = Array(try JSONEncoder().encode(AuthenticationOptionsRequest(username: "bench-user-0007@example.com")))
    let credentialID = b64(43, 1)
    let finishBody = leanFinishBody(
        handle: b64(180, 2),
        credential: AuthenticationResponseJSON(
            id: credentialID, rawId: credentialID,
            response: .init(clientDataJSON: b64(184, 3), authenticatorData: b64(50, 4), signature: b64(96, 5), userHandle: b64(22, 6))))
    // Both must decode to what they carry, or the figures would time an error path.
    guard try JSONValueDecoder().decode(AuthenticationOptionsRequest.self, from: optionsBody).username == "bench-user-0007@example.com",
        try JSONValueDecoder().decode(AuthenticationFinishRequest.self, from: finishBody).credential.rawId == credentialID
    else { throw BlockingHTTPClient.Failure(description: "the sign-in bodies do not decode") }
    let optionsTree = try JSONParser.parse(optionsBody, maximumDepth: 64)
    let finishTree = try JSONParser.parse(finishBody, maximumDepth: 64)
    print("sign-in request bodies: options \(optionsBody.count) bytes, finish \(finishBody.count) bytes (as the ceremony client sends them)")
    // HTTPRequest.decode's depth bound (Shared/HTTPServer/HTTPTypes.swift).
    let depth = 64
    let foundation = JSONDecoder()
    foundation.dateDecodingStrategy = .iso8601
    // Eight parts timed in turn, in slices of about 50 ms of this thread's CPU time (not
    // wall-clock time: the machine is shared), until each has had `seconds / 4` of it.
    let parts: [() throws -> Void] = [
        { _ = try JSONParser.parse(optionsBody, maximumDepth: depth) },
        { _ = try JSONValueDecoder().decode(AuthenticationOptionsRequest.self, from: optionsTree) },
        { _ = try JSONValueDecoder().decode(AuthenticationOptionsRequest.self, from: optionsBody, maximumDepth: depth) },
        { _ = try foundation.decode(AuthenticationOptionsRequest.self, from: Data(optionsBody)) },
        { _ = try JSONParser.parse(finishBody, maximumDepth: depth) },
        { _ = try JSONValueDecoder().decode(AuthenticationFinishRequest.self, from: finishTree) },
        { _ = try JSONValueDecoder().decode(AuthenticationFinishRequest.self, from: finishBody, maximumDepth: depth) },
        { _ = try foundation.decode(AuthenticationFinishRequest.self, from: Data(finishBody)) },
        { _ = AuthenticationOptionsRequest(directJSON: optionsTree) },
        { _ = AuthenticationFinishRequest(directJSON: finishTree) },
    ]
    guard AuthenticationOptionsRequest(directJSON: optionsTree) == (try JSONValueDecoder().decode(AuthenticationOptionsRequest.self, from: optionsTree)),
        AuthenticationFinishRequest(directJSON: finishTree) == (try JSONValueDecoder().decode(AuthenticationFinishRequest.self, from: finishTree))
    else { throw BlockingHTTPClient.Failure(description: "the direct reading differs from Codable's") }
    for run in 1...3 {
        let us = try interleavedRates(seconds: seconds / 4, parts).map { 1e6 / $0 }
        print(String(
            format: "json_signin_decode_us run %d  options: parse %.2f codable %.2f both %.2f (JSONDecoder %.2f)  finish: parse %.2f codable %.2f both %.2f (JSONDecoder %.2f)  both bodies %.2f (JSONDecoder %.2f)",
            run, us[0], us[1], us[2], us[3], us[4], us[5], us[6], us[7], us[2] + us[6], us[3] + us[7]))
        print(String(
            format: "json_signin_direct_us run %d  options: direct %.2f (codable %.2f)  finish: direct %.2f (codable %.2f)  both bodies parsed and read directly %.2f (with codable %.2f)",
            run, us[8], us[1], us[9], us[5], us[0] + us[8] + us[4] + us[9], us[2] + us[6]))
    }
}
