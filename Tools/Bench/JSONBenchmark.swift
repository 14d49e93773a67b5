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
}
